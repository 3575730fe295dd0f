/** Where `mq9 serve` and `mq9 templates check` look for task templates when not told otherwise. */
export const DEFAULT_TEMPLATES_FOLDER = "./mq9-templates";
