// Fixtures more than one package's tests use, written once.

/** The orchestrator design's template, exactly as the design writes it (a fan-out of three and a merge). */
export const DESIGN_TEMPLATE = `task_type: content_analysis
steps:
  - id: summarize
    capability: text_summarization
    mode: pipeline
  - id: extract_keywords
    capability: keyword_extraction
    mode: fan_out
    depends_on: []
  - id: check_quality
    capability: quality_check
    mode: fan_out
    depends_on: []
  - id: merge_result
    mode: merge
    depends_on: [summarize, extract_keywords, check_quality]
`;
