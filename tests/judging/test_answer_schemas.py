"""The JSON schemas a judge is asked to follow: a micro-edit's schema holds the model to the one-word rule
its answer is checked against, and every task type's schema becomes a grammar llama.cpp's parser takes
(a grammar it refuses leaves a local model unconstrained: the bundled model then wrote phrases)."""

import json
import random
import re

import pytest

from annotation.task_types import TASK_TYPES, get_task_type
from annotation.task_types.free_text import ONE_WORD, one_word_pattern
from judging.prompts import default_schema

from .conftest import _missing

WORD_ALPHABET = 'abgAB-]^É"\\<> é日本ßİ'


def pattern_accepts(pattern: str, word: str) -> bool:
    return re.fullmatch(pattern.removeprefix("^").removesuffix("$"), word) is not None


def rule_accepts(word: str, *, max_length: int, original: str) -> bool:
    """``MicroEdit.validate``'s rule, less the quote and backslash the pattern leaves out."""
    return (
        ONE_WORD.match(word) is not None
        and not set(word) & {'"', "\\"}
        and len(word) <= max_length
        and word.casefold() != original.casefold()
    )


@pytest.mark.parametrize("original", ["bridge", "a", "Ab", "x-y]^", "É", "日本", "don't"])
def test_the_one_word_pattern_accepts_what_the_rule_accepts_and_nothing_else(original):
    rng = random.Random(original)
    max_length = 8
    pattern = one_word_pattern(max_length=max_length, original=original)
    words = [original, original.upper(), original.lower(), original + "s", original[:-1], "tunnel", "a b", "x" * 9]
    words += ["".join(rng.choice(WORD_ALPHABET) for _ in range(rng.randint(1, 10))) for _ in range(4000)]
    wrong = [
        word
        for word in words
        if pattern_accepts(pattern, word) != rule_accepts(word, max_length=max_length, original=original)
    ]
    assert not wrong, (pattern, wrong[:5])


def test_without_a_marked_word_any_short_word_fits():
    pattern = one_word_pattern(max_length=5)
    assert pattern_accepts(pattern, "hello") and not pattern_accepts(pattern, "hellos")


def test_the_micro_edit_schema_names_the_items_own_word():
    schema = default_schema(
        task_type="micro_edit", config={"max_length": 12}, n_candidates=0, item_text="Mayor opens new <bridge/>"
    )
    pattern = schema["properties"]["replacement"]["pattern"]
    assert pattern_accepts(pattern, "tunnel")
    assert not pattern_accepts(pattern, "Bridge")
    assert not pattern_accepts(pattern, "two words")
    assert not pattern_accepts(pattern, "x" * 13)


@pytest.fixture(scope="module")
def llama_grammar_parser():
    """A function telling whether llama.cpp's own parser takes a GBNF grammar (the model's vocabulary only)."""
    try:
        import llama_cpp
        from llama_cpp.llama_grammar import json_schema_to_gbnf

        from judging.local_model import smollm2_gguf

        model = llama_cpp.Llama(model_path=str(smollm2_gguf()), vocab_only=True, verbose=False)
    except Exception as exc:  # noqa: BLE001 - absent locally: skipped; required in CI
        _missing(f"needs llama-cpp-python and the bundled model: {exc}")
    vocab = llama_cpp.llama_model_get_vocab(model.model)

    def parses(schema: dict) -> bool:
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, json_schema_to_gbnf(json.dumps(schema)).encode(), b"root")
        if sampler:
            llama_cpp.llama_sampler_free(sampler)
        return bool(sampler)

    yield parses
    model.close()


def test_llama_cpps_parser_refuses_what_it_should(llama_grammar_parser):
    # The check is real: a class with ``\s`` (what the pattern held at first) is refused.
    assert not llama_grammar_parser({"type": "string", "pattern": r"^[^\s<>]+$"})
    assert llama_grammar_parser({"type": "string", "pattern": r"^[^ <>]+$"})


@pytest.mark.parametrize("task_type", sorted(TASK_TYPES))
def test_every_task_types_schema_becomes_a_grammar_llama_cpp_takes(task_type, llama_grammar_parser):
    kind = get_task_type(task_type)
    _prompt, text, candidates = kind.sample_item()
    schema = default_schema(
        task_type=task_type, config=kind.config(kind.default_config), n_candidates=len(candidates), item_text=text
    )
    if schema is None:
        pytest.skip(f"{task_type} asks for free text")
    assert llama_grammar_parser(schema), json.dumps(schema)[:500]
