"""Mutants of CodeSage's claims (docs/demos.md, CodeSage), found by the catalogue (tests/mutants/__init__.py) from
this folder: each the smallest change to its product code that makes a claim false, and the tests that must fail."""

from __future__ import annotations

from tests.mutants import Mutant

MUTANTS = (
    Mutant("codesage-no-eos", "each sequence ends with the end-of-sequence token, as the paper's evaluation builds it "
           "(docs/demos.md, CodeSage)", "apps/codesage/tokenizer.py",
           "(*e.ids[: max_tokens - 1], self.eos_id)", "(*e.ids[: max_tokens - 1],)",
           ("tests/codesage/test_pipeline.py::test_an_embedding_is_unit_length_and_says_when_the_text_was_cut",)),
    Mutant("codesage-mean-over-padding", "the embedding is the mean over the tokens the mask keeps, so batching "
           "changes nothing (docs/demos.md, CodeSage)", "apps/codesage/model.py",
           "return (hidden * mask[:, :, None]).sum(1) / mask.sum(1)[:, None]", "return hidden.mean(1)",
           ("tests/codesage/test_pipeline.py::test_batched_embeddings_equal_one_at_a_time",)),
    Mutant("codesage-no-kept-embeddings", "a second question about the same code embeds only the question "
           "(docs/demos.md, CodeSage)", "apps/codesage/pipeline.py",
           "kept = {k: self._cache[k] for k in keys if k in self._cache}", "kept = {}",
           ("tests/codesage/test_pipeline.py::test_a_second_question_about_the_same_code_embeds_only_the_question",)),
    Mutant("codesage-zip-member-size-unchecked", "a zip member over the size budget is left out from the zip's "
           "directory, never unpacked (docs/demos.md, CodeSage)", "apps/codesage/corpus.py",
           "elif info.file_size > MAX_FILE_BYTES:", "elif False:",
           ("tests/codesage/test_corpus.py::test_a_zip_bomb_is_never_unpacked",)),
    Mutant("codesage-no-token-budget", "a search embeds at most its token budget of new code; the next question "
           "searches the rest (docs/demos.md, CodeSage)", "apps/codesage/pipeline.py",
           "if spent + len(e.ids) > self.token_budget:", "if False:",
           ("tests/codesage/test_pipeline.py::test_a_search_over_its_token_budget_searches_what_fits_and_the_next_"
            "question_the_rest",)),
    Mutant("codesage-pad-typed-in-kept", "a '<pad>' a text spells out is masked as the official evaluation masks it "
           "(docs/demos.md, CodeSage: fidelity)", "apps/codesage/model.py",
           "mask[row, : len(sequence)] = sequence != pad_id", "mask[row, : len(sequence)] = 1",
           ("tests/codesage/test_official_parity.py",)),
    Mutant("codesage-exact-gelu", "our encoder gives the official embeddings within 1e-5 (docs/demos.md, CodeSage: "
           "fidelity; gelu_new is GELU's tanh form)", "apps/codesage/model.py",
           '"gelu_new": lambda x: F.gelu(x, approximate="tanh"),', '"gelu_new": F.gelu,',
           ("tests/codesage/test_official_parity.py",)),
    Mutant("codesage-docstring-split", "a file is never cut inside a triple-quoted string or a /* */ comment "
           "(docs/demos.md, CodeSage)", "apps/codesage/corpus.py", "starts_block = (closing is None and",
           "starts_block = (True and",
           ("tests/codesage/test_corpus.py::test_a_docstring_with_blank_lines_stays_whole_in_its_snippet",
            "tests/codesage/test_corpus.py::test_a_block_comment_with_blank_lines_stays_whole_and_python_"
            "globs_open_none")),
    Mutant("codesage-comments-in-every-language", "'/*' opens a comment only in the languages that have one "
           "(docs/demos.md, CodeSage)", "apps/codesage/corpus.py",
           "if PurePosixPath(path).suffix.lower() in BLOCK_COMMENT_SUFFIXES else QUOTES", "if True else QUOTES",
           ("tests/codesage/test_corpus.py::test_a_block_comment_with_blank_lines_stays_whole_and_python_"
            "globs_open_none",)),
)
