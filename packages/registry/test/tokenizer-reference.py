"""Reference tokenizations for tokenizer-reference.test.ts, from the real libraries.

Reads one JSON request on stdin and writes the token ids of each text of its corpus on stdout:

  {"kind": "wordpiece", "dir": ..., "lowercase": bool, "strip_accents": bool | null,
   "save_json": bool, "corpus": [...]}
      Hugging Face tokenizers' BERT pipeline (BertNormalizer, BertPreTokenizer, WordPiece,
      [CLS] ... [SEP]) over dir/vocab.txt. With save_json it also writes dir/tokenizer.json,
      the file a model folder carries, for the TypeScript tokenizer to read.

  {"kind": "sentencepiece", "vocabulary": [[piece, score], ...], "reserved": n,
   "normalization": "nmt_nfkc" | "nfkc", "corpus": [...]}
      Google's sentencepiece, unigram model, over a model made of that vocabulary (entry 0 the
      unknown piece, the next reserved - 1 control pieces) and the named normalization rule.
"""

import io
import json
import os
import sys


def wordpiece(request):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab_file = os.path.join(request["dir"], "vocab.txt")
    tokenizer = Tokenizer(
        models.WordPiece.from_file(vocab_file, unk_token="[UNK]", max_input_chars_per_word=100)
    )
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=True,
        strip_accents=request["strip_accents"],
        lowercase=request["lowercase"],
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.BertProcessing(
        ("[SEP]", tokenizer.token_to_id("[SEP]")), ("[CLS]", tokenizer.token_to_id("[CLS]"))
    )
    if request.get("save_json"):
        tokenizer.save(os.path.join(request["dir"], "tokenizer.json"))
    return [tokenizer.encode(text).ids for text in request["corpus"]]


def normalizer_spec(rule):
    """The named rule's spec (with its compiled character map), taken from a model trained with it."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(["a b c d e f g h i j k l m n o p"] * 20),
        model_writer=model,
        vocab_size=20,
        model_type="char",
        normalization_rule_name=rule,
        minloglevel=2,
    )
    trained = model_pb2.ModelProto()
    trained.ParseFromString(model.getvalue())
    return trained.normalizer_spec


def sentencepiece(request):
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    model = model_pb2.ModelProto()
    model.trainer_spec.model_type = model_pb2.TrainerSpec.UNIGRAM
    model.trainer_spec.unk_id = 0
    model.trainer_spec.bos_id = 1
    model.trainer_spec.eos_id = 2
    model.trainer_spec.pad_id = -1
    model.normalizer_spec.CopyFrom(normalizer_spec(request["normalization"]))
    seen = set()
    for i, (text, score) in enumerate(request["vocabulary"]):
        piece = model.pieces.add()
        # A score the vocabulary file lost (null) counts as 0, as it does in the JavaScript tokenizers.
        piece.score = float(score or 0)
        if text in seen:
            # A piece listed twice is matched by its first entry; the later one keeps its id only.
            piece.piece = f"<duplicate {i}>"
            piece.type = model_pb2.ModelProto.SentencePiece.UNUSED
            continue
        seen.add(text)
        piece.piece = text
        if i == 0:
            piece.type = model_pb2.ModelProto.SentencePiece.UNKNOWN
        elif i < request["reserved"]:
            piece.type = model_pb2.ModelProto.SentencePiece.CONTROL
    processor = spm.SentencePieceProcessor(model_proto=model.SerializeToString())
    return [processor.encode(text) for text in request["corpus"]]


def main():
    request = json.load(sys.stdin)
    kinds = {"wordpiece": wordpiece, "sentencepiece": sentencepiece}
    json.dump(kinds[request["kind"]](request), sys.stdout)


if __name__ == "__main__":
    main()
