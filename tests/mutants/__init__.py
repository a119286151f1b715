"""Mutants that guard the claims: for each headline claim of the README, docs/ and BENCHMARKS.md that a test holds,
one small change to product code that makes the claim false, and the tests that must fail with it.

``scripts/mutants`` applies each to a temporary copy of the checkout, runs only its tests there and prints caught or
missed; CI runs it after the suite. Adding a claim: add a ``Mutant`` here with the smallest change that breaks it
(``find`` must occur exactly once in ``path``; tests/mutants/test_catalogue.py checks) and the tests that hold it. A
demo keeps the mutants of its own claims in ``tests/<id>/mutants.py`` (a ``MUTANTS`` tuple), found from its folder
as the demos are: a new demo adds nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    claim: str  # what it breaks, and where the claim is written
    path: str  # product file, relative to the repository root
    find: str  # occurs exactly once in ``path``
    replace: str
    tests: tuple[str, ...]  # pytest node ids (a parametrized case as ``name[ids]``) or paths that must fail


SHARES = "tests/security/test_shares.py"

MUTANTS = (
    Mutant("no-room-for-newcomers", "a full hub makes room for a newcomer (docs/deploying.md, A client's share)",
           "apps/limits.py", "    if most < counts.get(host, 0) + 2:\n        return None",
           "    if True:\n        return None",
           (f"{SHARES}::test_a_full_hub_makes_room_for_an_honest_visitor",
            "tests/hub/test_limits.py::test_connections_over_the_limits_get_a_503_line_and_are_closed")),
    Mutant("no-minimum-body-rate", "every body arrives at --min-body-rate after --read-timeout (docs/deploying.md)",
           "apps/limits.py", "        if self.min_rate:\n            wait = min(",
           "        if False:\n            wait = min(",
           (f"{SHARES}::test_slow_drips_are_closed_at_their_total_deadline",
            "tests/hub/test_limits.py::test_a_slow_drip_is_refused_once_it_falls_under_the_minimum_rate")),
    Mutant("no-client-job-share", "one client holds at most --client-jobs of the queue (docs/deploying.md)",
           "apps/serving.py", "    if held >= settings.client_jobs:", "    if held >= 10**9:",
           (f"{SHARES}::test_one_client_fills_only_its_share_of_the_queue",
            f"{SHARES}::test_every_queued_event_keeps_one_client_to_its_share")),
    Mutant("arrivals-not-counted", "a burst of joins cannot pass admission before the first is queued",
           "apps/serving.py", "        self.counts[client] += 1", "        self.counts[client] += 0",
           (f"{SHARES}::test_every_queued_event_keeps_one_client_to_its_share",)),
    Mutant("no-upload-quota", "one client keeps at most --client-upload-quota of uploads (docs/deploying.md)",
           "apps/shares.py", "        if stored + size <= self.client_upload_quota:",
           "        if stored + size <= 10**15:",
           (f"{SHARES}::test_an_upload_quota_per_client_while_another_address_uploads",
            "tests/hub/test_shares.py::test_an_upload_quota_per_client_with_a_shorter_retention_without_a_login")),
    Mutant("no-login-waits", "wrong passwords slow their client down (docs/deploying.md)",
           "apps/shares.py", "        delay = min(LOGIN_MAX_WAIT, 2.0 ** (failures.count - free))",
           "        delay = 0.0",
           (f"{SHARES}::test_guessing_is_slowed_while_the_right_user_logs_in_from_elsewhere",
            "tests/hub/test_shares.py::test_wrong_passwords_slow_their_client_down_but_never_the_real_user_elsewhere")),
    Mutant("open-data-routes", "with --auth every route that takes or gives data needs the login (docs/deploying.md)",
           "apps/serving.py", "    return method in (\"GET\", \"HEAD\") and bool(_OPEN_WITHOUT_LOGIN.match(path))",
           "    return True",
           (f"{SHARES}::test_every_route_that_takes_or_gives_data_needs_the_login",)),
    Mutant("no-stream-share", "one client holds at most --client-streams event streams (docs/deploying.md)",
           "apps/shares.py", "        if self.streams[client] >= self.client_streams:",
           "        if self.streams[client] >= 10**9:",
           (f"{SHARES}::test_a_client_holds_its_share_of_event_streams",
            "tests/hub/test_limits.py::test_a_client_may_hold_its_share_of_streams_and_no_more")),
    Mutant("empty-auth-serves", "an --auth naming no login refuses to start (docs/deploying.md)",
           "apps/settings.py", "        if self.auth_given and not self.auth:", "        if False:",
           (f"{SHARES}::test_an_auth_file_without_a_login_refuses_to_start",)),
    Mutant("login-cookie-ignored", "a member who logged in on the page is served behind --auth",
           "apps/shares.py", "    return tokens.get(token) if token else None", "    return None",
           (f"{SHARES}::test_a_member_logs_in_on_the_page_and_the_page_works_behind_the_login",)),
    Mutant("mert-reads-a-path-string", "an endpoint never reads a server file its caller names (docs/deploying.md, "
           "Endpoints read only uploads)", "apps/mert/api.py",
           '    return checks.check_inputs(api_file(audio, "audio"), tasks, window, decode=False)',
           '    return checks.check_inputs(audio if isinstance(audio, str) else api_file(audio, "audio"), tasks, '
           'window, decode=False)',
           ("tests/security/test_exposure.py::test_an_endpoint_never_reads_a_server_file_its_caller_names",)),
    Mutant("raw-callers-get-no-defaults", "an endpoint that gains an optional input keeps answering raw callers "
           "that leave it out (docs/architecture.md)", "apps/event_inputs.py",
           "            inputs = with_defaults(block_fn, inputs)", "            inputs = inputs",
           ("tests/security/test_exposure.py::test_a_raw_caller_may_leave_out_the_trailing_inputs_that_have_defaults",)),
    Mutant("mert-parts-averaged-equally", "a long track is described from the length-weighted average of its "
           "parts (docs/demos.md, MERT)", "apps/mert/pipeline.py", "    return lengths / lengths.sum()",
           "    return torch.full_like(lengths, 1 / len(lengths))",
           ("tests/mert/test_pipeline.py::test_a_long_tracks_parts_are_averaged_by_their_length",)),
    Mutant("int8-never-packed", "int8 steps of up to 16 rows run PyTorch's packed kernel (BENCHMARKS.md, 3D-MoLM "
           "at full size)", "shared/quantize.py", "        if rows.shape[0] <= PACKED_ROWS:",
           "        if rows.shape[0] <= 0:",
           ("tests/shared/test_quantize.py::test_a_short_prompt_runs_int8s_packed_kernel_and_a_long_one_widens_the_weight",)),
    Mutant("int8-widened-into-new-memory", "a long prompt widens int8 weights into a buffer its thread keeps "
           "(BENCHMARKS.md: a new question's first token)", "shared/quantize.py",
           "    buffer = getattr(_scratch, name, None)\n", "    buffer = None\n",
           ("tests/shared/test_quantize.py::test_a_long_prompt_widens_int8_tile_by_tile_into_one_buffer_per_thread",)),
    Mutant("int4-never-widened", "a long prompt widens int4 weights a tile at a time instead of running the int4 "
           "kernel (BENCHMARKS.md: a new question's first token)", "shared/quantize.py",
           "        if rows.shape[0] > INT4_PACKED_ROWS and", "        if False and",
           ("tests/shared/test_quantize.py::test_a_long_prompt_widens_int4_tile_by_tile_and_a_short_one_runs_the_kernel",)),
    Mutant("int4-halves-swapped", "widening reads PyTorch's int4 packing right (low nibble output i, high 32 + i)",
           "shared/quantize.py", "        halves[:, :, 0].copy_(codes.permute(1, 0, 2))",
           "        halves[:, :, 1].copy_(codes.permute(1, 0, 2))",
           ("tests/shared/test_quantize.py::test_a_pytorch_that_packs_int4_otherwise_runs_the_kernel_for_long_prompts",)),
    Mutant("int4-calibration-ignored", "calibrated int4 scales the large input channels (AWQ; BENCHMARKS.md, on a "
           "trained Llama)", "shared/quantize.py", "        if statistics is not None:\n            mean_square",
           "        if False:\n            mean_square",
           ("tests/shared/test_quantize.py::test_calibrated_int4_protects_the_large_input_channels_and_computes_what_it_stands_for",)),
    Mutant("molm3d-int4-uncalibrated", "3D-MoLM's int4 is calibrated as AWQ does (BENCHMARKS.md, on a trained "
           "Llama)", "apps/molm3d/llm.py", '    calibrated = quantization == "int4" and calibrate is not None',
           "    calibrated = False",
           ("tests/molm3d/test_quantize.py::test_int4_is_calibrated_and_int8_is_not",)),
    Mutant("molm3d-int4-second-model-built", "calibrated int4 quantises the first model's layers again in place "
           "(BENCHMARKS.md: the peak while loading)", "apps/molm3d/llm.py",
           "            _load_quantized(folder, pairs, dtype, quantization, statistics, into=model)",
           "            model = _load_quantized(folder, pairs, dtype, quantization, statistics)",
           ("tests/molm3d/test_quantize.py::test_int4s_second_pass_quantises_the_first_models_layers_in_place",)),
    Mutant("requantize-into-new-buffers", "quantising again writes each layer's new codes into its old buffers "
           "(BENCHMARKS.md: int4's peak while loading, 4.9 GiB where new buffers gave 6.8)", "shared/quantize.py",
           "                setattr(quantized, key, kept.copy_(buffer))", "                pass",
           ("tests/shared/test_quantize.py::test_requantizing_replaces_each_layer_in_place_as_its_weight_arrives_and_"
            "frees_the_old_one_at_once",)),
    Mutant("requantize-keeps-old-layers", "quantising again frees each old layer at once (memory: the model plus one "
           "layer)", "shared/quantize.py", "        modules[owner_name] = quantized\n", "        pass\n",
           ("tests/shared/test_quantize.py::test_requantizing_replaces_each_layer_in_place_as_its_weight_arrives_and_"
            "frees_the_old_one_at_once",)),
    Mutant("molm3d-gpu-dynamic-cache", "on a GPU 3D-MoLM decodes with a static KV cache (CUDA graphs; docs/demos.md)",
           "apps/molm3d/pipeline.py", 'prefilled = {"cache_implementation": "static"} if self.static_cache else',
           "prefilled = {} if self.static_cache else",
           ("tests/molm3d/test_pipeline.py::test_the_static_cache_path_a_gpu_decodes_with_gives_the_same_answers",)),
    Mutant("llama-loaded-whole-then-quantised", "3D-MoLM's quantised load streams the shards (BENCHMARKS.md: "
           "4.8 GiB while loading, int4)", "apps/molm3d/llm.py",
           "    if not quantization:\n        model = LlamaForCausalLM.from_pretrained(",
           "    if True:\n        model = LlamaForCausalLM.from_pretrained(",
           ("tests/molm3d/test_quantize.py::test_the_quantised_load_streams_and_never_builds_the_model_in_full_precision",
            )),
    Mutant("quantised-cache-not-read", "a quantised load reads the model the previous one cached (BENCHMARKS.md: "
           "int4 ready from the cache)", "apps/molm3d/llm.py",
           "_read_cached(folder, cached, vocab_size) if cached and cached.is_file() else",
           "_read_cached(folder, cached, vocab_size) if False else",
           ("tests/molm3d/test_quantize.py::test_the_quantised_model_is_cached_and_the_next_load_reads_it_tensor_for_tensor",)),
    Mutant("cached-weights-left-in-the-file", "a cached quantised model is copied into aligned memory (a 7B int8 "
           "model read in place crashed PyTorch's kernel: BENCHMARKS.md)", "shared/quantize.py",
           "    tensors = load_safetensors(source, owned=True)", "    tensors = load_safetensors(source)",
           ("tests/shared/test_quantize.py::test_a_cached_quantised_model_fills_an_empty_one_tensor_for_tensor_and_"
            "refuses_what_does_not_fit",
            "tests/molm3d/test_quantize.py::test_the_quantised_model_is_cached_and_the_next_load_reads_it_tensor_for_tensor")),
    Mutant("quantised-cache-ignores-lora", "the quantised cache is keyed by everything the model is made of "
           "(docs/deploying.md)", "apps/molm3d/llm.py", "tensors_digest(lora), mode,", "mode,",
           ("tests/molm3d/test_quantize.py::test_the_cache_is_keyed_by_everything_the_quantised_model_is_made_of",)),
    Mutant("quantised-cache-shapes-unchecked", "a cached quantised layer of another shape is refused, the model "
           "quantised again (docs/deploying.md)", "shared/quantize.py",
           "(value is None or tuple(value.shape) != spec[0]", "(value is None",
           ("tests/molm3d/test_quantize.py::test_a_cache_that_cannot_be_used_is_logged_and_the_model_quantised_again",
            "tests/shared/test_quantize.py::test_a_cached_quantised_model_fills_an_empty_one_tensor_for_tensor_and_"
            "refuses_what_does_not_fit")),
    Mutant("cache-writers-share-a-file", "writers caching the same file at once leave one whole file "
           "(docs/deploying.md)", "shared/checkpoints.py",
           '    tmp = target.with_name(f"{target.name}.{os.getpid()}-{threading.get_ident()}.partial")',
           '    tmp = target.with_name(target.name + ".partial")',
           ("tests/shared/test_checkpoints.py::test_writers_caching_the_same_file_at_once_leave_one_whole_file",)),
    Mutant("cache-fills-the-disk", "a cache write that would leave less than 1 GB free is skipped "
           "(docs/deploying.md)", "shared/checkpoints.py",
           "    if free_bytes(target.parent) < size + DISK_RESERVE_BYTES:", "    if False:",
           ("tests/shared/test_checkpoints.py::test_a_cache_write_that_would_fill_the_disk_is_skipped_with_a_log",)),
    Mutant("prompt-start-not-reused", "a molecule's prompt starts from the stored KV cache of its preamble and "
           "instruction (BENCHMARKS.md, 3D-MoLM at full size)", "apps/molm3d/pipeline.py",
           "            stored = self._prefixes.get(key)\n", "            stored = None\n",
           ("tests/molm3d/test_pipeline.py::test_one_molecule_starts_from_the_stored_start_of_its_prompt_for_the_same_"
            "answers",)),
    Mutant("preamble-not-reused", "a question the server has not seen runs only its own tokens: the preamble every "
           "prompt shares is computed once and kept (BENCHMARKS.md, 3D-MoLM at full size)", "apps/molm3d/pipeline.py",
           "            preamble = self._preamble\n", "            preamble = None\n",
           ("tests/molm3d/test_pipeline.py::test_one_molecule_starts_from_the_stored_start_of_its_prompt_for_the_same_"
            "answers",)),
    Mutant("molm3d-answer-memory-kept", "an answer gives its KV cache's memory back when it is done (BENCHMARKS.md, "
           "3D-MoLM at full size: the peak while answering)", "apps/molm3d/pipeline.py",
           "        pool.trim_heap()  # its pages back", "        pass  # its pages back",
           ("tests/molm3d/test_pipeline.py::test_an_answer_gives_its_kv_caches_memory_back_when_it_is_done",)),
    Mutant("declared-body-read", "a declared body over its route's budget is refused before a byte is read "
           "(docs/deploying.md, A budget for every request)", "apps/serving.py",
           "        if declared is not None and declared > limit:  # before the login",
           "        if False:  # before the login",
           ("tests/hub/test_limits.py::test_a_declared_body_over_the_budget_is_refused_before_it_is_read",)),
    Mutant("beams-run-the-prompt-each", "the official 5-beam decoding runs each prompt once, then copies its KV cache "
           "to the beams (BENCHMARKS.md, 3D-MoLM at full size)", "apps/molm3d/pipeline.py",
           "if self.static_cache else self._prefill(\n            embeds, mask,",
           "if self.static_cache else (lambda *a: {})(\n            embeds, mask,",
           ("tests/molm3d/test_pipeline.py::test_official_beams_run_each_prompt_once_for_the_same_answers",)),
    Mutant("a-check-imports-torch", "the first call is as good as the hundredth: nothing a request passes through "
           "before it is queued imports torch (docs/deploying.md)", "apps/tag2text/checks.py",
           "from typing import Any, NamedTuple\n", "from typing import Any, NamedTuple\n\nimport torch\n",
           ("tests/hub/test_first_call.py::test_every_check_runs_without_torch",)),
    Mutant("warm-up-switched-off", "once serving, the hub imports the model code in the background, so the first "
           "model call does not wait for it (docs/deploying.md); a hub-as-a-command test, run in the mutants' copy",
           "apps/hub.py", "on_serving=warm_up if warm else None,", "on_serving=None,",
           ("tests/hub/test_first_call.py::test_warm_up_imports_the_model_code_after_the_first_answer",)),
    Mutant("geodiffusion-location-ids-shifted", "GeoDiffusion's location tokens get the official tokenizer's ids "
           "(docs/demos.md, GeoDiffusion: identical to the official tokenizer)", "apps/geodiffusion/tokens.py",
           "            ids.append(BASE_VOCAB_SIZE + n)\n", "            ids.append(BASE_VOCAB_SIZE + n + 1)\n",
           ("tests/geodiffusion/test_tokens.py::test_ids_identical_to_official_tokenizer",)),
    Mutant("prax-examples-label-first", "PraX's listeners read the examples as the official code serialises them "
           "(docs/demos.md, PraX)", "apps/prax/tokens.py",
           '        f"<extra_id_{i}>{ex.string}{ex.label}" for i, ex in enumerate(examples))',
           '        f"<extra_id_{i}>{ex.label}{ex.string}" for i, ex in enumerate(examples))',
           ("tests/prax/test_tokens.py::test_prompt_serialises_as_the_fact_sheet_shows",)),
    Mutant("unimol-kernel-unscaled", "3D-MoLM's Uni-Mol encoder computes the official Gaussian distance kernels "
           "(docs/demos.md, 3D-MoLM: the official checkpoints load unchanged)", "apps/molm3d/unimol.py",
           "        x = self.mul(edge_type).type_as(dist) * dist.unsqueeze(-1) + self.bias(edge_type).type_as(dist)",
           "        x = dist.unsqueeze(-1) + self.bias(edge_type).type_as(dist)",
           ("tests/molm3d/test_modules.py::test_gaussian_kernel_formula",)),
    Mutant("serve-skips-its-setup", "the README's start command sets itself up on a fresh clone (README)",
           "scripts/serve", "setup_environment requirements.txt\n", "\n",
           ("tests/hub/test_commands.py::test_the_readme_start_command_sets_itself_up_and_serves_from_a_fresh_clone",)),
    Mutant("embed-warning-silent", "an embed snippet for an address only this machine reaches says so first "
           "(docs/embed.md)", "apps/ui.py", "const reach = base ? '' : (", "const reach = '' && (",
           ("tests/browser/test_embed_address.py::test_a_loopback_hub_says_its_snippet_works_only_here_before_the_snippet",)),
    Mutant("public-url-ignored", "a hub given --public-url shows snippets with it (docs/embed.md)", "apps/ui.py",
           "const page = base ? base + route : here;", "const page = here;",
           ("tests/browser/test_embed_address.py::test_a_hub_given_its_public_address_shows_snippets_with_it",)),
    Mutant("int8-rounds-the-whole-weight", "int8 rounds a layer a block of rows at a time, never holding its whole "
           "float copy (BENCHMARKS.md, Ready after a restart)", "shared/quantize.py",
           "        for start in range(0, weight.shape[0], ROUND_ROWS):\n"
           "            block = weight[start:start + ROUND_ROWS].to(torch.float32, copy=True)",
           "        for start in range(0, weight.shape[0], weight.shape[0]):\n"
           "            block = weight[start:].to(torch.float32, copy=True)",
           ("tests/shared/test_quantize.py::test_quantising_a_large_layer_never_holds_its_whole_float_copies",)),
    Mutant("quantising-keeps-freed-blocks", "each quantised layer gives its rounding blocks back (BENCHMARKS.md, "
           "Ready after a restart: a 7B int8 load 8.97 GB at most)", "shared/quantize.py",
           "    trim_heap()\n    return quantized", "    return quantized",
           ("tests/shared/test_quantize.py::test_each_layer_quantised_gives_its_rounding_blocks_back_to_the_system",)),
    Mutant("page-links-wrap-at-720", "the hub's page links keep one line at a paper page's 720 px "
           "(docs/architecture.md, One look)", "apps/ui.py", '"head": HEAD_CSS + EMBED_HEAD', '"head": EMBED_HEAD',
           ("tests/browser/test_layout.py::test_page_fits_width_and_shows_its_main_controls[landing-720-light]",)),
    Mutant("smiles-read-as-markdown", "a typed SMILES is shown as written, never read as Markdown (docs/demos.md, "
           "3D-MoLM)", "apps/molm3d/views.py", 'lines = [f"**{text(conf.smiles[:120])}**:',
           'lines = [f"**{conf.smiles[:120]}**:', ("tests/hub/test_text.py",)),
    Mutant("pages-show-the-api-description", "no page shows the API's words: null, \"\", data URI "
           "(docs/adding-a-demo.md)",
           "shared/api.py", "        text = self.help or self.description\n", "        text = self.description\n",
           ("tests/hub/test_page_words.py",)),
    Mutant("streamlit-multiline-on-one-line", "a multiline input keeps its lines on the Streamlit form "
           "(docs/adding-a-demo.md)", "apps/streamlit_forms.py", "        if i.multiline:", "        if False:",
           ("tests/streamlit/test_streamlit_hub.py::test_a_multiline_input_keeps_its_lines",)),
    Mutant("example-leaves-the-switch", "an example click sets every field of a generated form (docs/adding-a-demo.md)",
           "apps/forms.py", "lambda v: (False, gr.skip()) if v is None else (True, v)",
           "lambda v: (gr.skip(), gr.skip()) if v is None else (True, v)",
           ("tests/browser/test_forms.py::test_mert_page_reads_like_a_hand_made_one_and_its_examples_fill_every_field",)),
    Mutant("refused-smiles-keeps-old-views", "a refused molecule leaves no views of the one before (docs/demos.md, "
           "3D-MoLM)", "apps/molm3d/page.py",
           '            trigger(None, None, shown, js=f"() => {json.dumps(list(actions.no_views()))}", queue=False)\n',
           "            json.dumps([])\n",
           ("tests/molm3d/test_browser.py::test_a_refused_smiles_clears_the_views_of_the_molecule_before",)),
    Mutant("old-upload-deletes-a-new-one", "one client keeps its uploads for its retention (docs/deploying.md, A "
           "client's share): a file uploaded again belongs to its latest upload", "apps/shares.py",
           "            self.uploads[who] = [u for u in self.uploads[who] if u.path not in fresh]\n",
           "            self.uploads[who] = list(self.uploads[who])\n",
           ("tests/hub/test_shares.py::test_a_file_uploaded_again_belongs_to_its_latest_upload",)),
    Mutant("prax-empty-handed", "a listener ranks its samples with the search's regexes, so it is never "
           "empty-handed where the search reads the examples (docs/demos.md, PraX)", "apps/prax/pipeline.py",
           "self.searched(spec) if search else ()", "()",
           ("tests/prax/test_pipeline.py::test_a_listener_ranks_its_samples_with_the_searchs_regexes",)),
    Mutant("prax-search-splits-runs", "the search reads a run of one atom as one piece (docs/demos.md, PraX)",
           "apps/prax/search.py", "                        if option.atom and option.atom == first:\n",
           "                        if False:\n",
           ("tests/prax/test_search.py::test_one_piece_is_never_split_into_two_of_the_same_atom",)),
    Mutant("prax-search-no-wider-beam", "the search is never empty-handed where the negatives rule out its first "
           "readings (docs/demos.md, PraX)", "apps/prax/search.py",
           "    for beam in (keep, WIDER * keep):", "    for beam in (keep,):",
           ("tests/prax/test_search.py::test_a_wider_beam_where_the_negatives_rule_out_every_reading_of_the_first",)),
    Mutant("prax-refusal-toasts-stack", "a refusal on the screen is about the latest string (docs/demos.md, PraX)",
           "apps/prax/page.py", ".forEach((close) => close.click());", ".forEach((close) => void close);",
           ("tests/robustness/test_person_browser.py::test_prax_refusals_in_a_row_show_one_toast_about_the_latest_string",)),
    Mutant("prax-bundled-sample-128-tokens", "our listeners sample up to their longest training program plus ten "
           "tokens (docs/demos.md, PraX)", "apps/prax/pipeline.py",
           "            pipe.max_new_tokens = min(MAX_NEW_TOKENS, int(trained_on) + 10)", "            pass",
           ("tests/prax/test_pipeline.py::test_our_listeners_sample_as_long_as_their_longest_program_and_upstreams_as_"
            "upstream",)),
    Mutant("prax-search-open-lengths-uniform", "the search's speaker types a few characters of an open-ended piece, "
           "not fifteen (docs/demos.md, PraX)", "apps/prax/search.py",
           "        return math.log(1 - OPEN_CONTINUE) + (length - low) * math.log(OPEN_CONTINUE)\n",
           "        return -math.log(dsl.MAX_EXAMPLE_LEN - low + 1)\n",
           ("tests/prax/test_search.py::test_the_score_is_the_prior_plus_the_likelihood_its_docstring_writes",)),
    Mutant("prax-no-search-first", "the page shows the search's guesses at once, before the listeners' (docs/demos.md, "
           "PraX)", "apps/prax/page.py",
           "        if examples:\n            yield *actions.search_panels(",
           "        if False:\n            yield *actions.search_panels(",
           ("tests/prax/test_page.py::test_the_page_shows_the_searchs_guesses_before_the_listeners",)),
    Mutant("mert-embedding-averaged-in", "MERT matches the Space's own inference bit for bit (docs/demos.md, MERT)",
           "apps/mert/model.py", "    return torch.stack(out.hidden_states[1:], dim=1).mean(dim=2)",
           "    return (torch.stack(out.hidden_states[1:], dim=1) + out.hidden_states[0][:, None]).mean(dim=2)",
           ("tests/mert/test_official_parity.py",)),
    Mutant("tag2text-beams-stop-unnormalised", "Tag2Text's captions are the official code's, token for token "
           "(README: same tags; docs/demos.md)", "apps/tag2text/decoding.py",
           "        return len(self.beams) >= self.num_beams and self.worst >= best_sum_logprobs / generated",
           "        return len(self.beams) >= self.num_beams and self.worst >= best_sum_logprobs",
           ("tests/tag2text/test_pipeline.py::test_beam_search_matches_transformers_4_46_golden_outputs",)),
    Mutant("forwarding-headers-believed", "untrusted forwarding headers are ignored: a client cannot pose as many "
           "(docs/deploying.md, --forwarded-allow-ips)", "apps/settings.py",
           '        return self.forwarded_allow_ips or ("*" if on_space() else "")', '        return "*"',
           (f"{SHARES}::test_a_client_cannot_pose_as_many_through_forwarding_headers",)),
    Mutant("mcp-list-files-unread", "a list of files is sent over MCP as data URIs, one per file (docs/api.md)",
           "apps/gradio_internals.py", "        return simplified, positions + listed",
           "        return simplified, positions",
           ("tests/mcp/test_mcp.py::test_tag2text_tag_batch_takes_a_list_of_data_uris",
            "tests/codesage/test_mcp.py::test_mcp_tools_search_and_embed_as_the_pipeline")),
)


def _demo_mutants() -> tuple[Mutant, ...]:
    """``MUTANTS`` of every ``tests/<id>/mutants.py``, in folder order."""
    import importlib
    from pathlib import Path

    tests = Path(__file__).resolve().parent.parent
    found: tuple[Mutant, ...] = ()
    for path in sorted(tests.glob("*/mutants.py")):
        found += tuple(importlib.import_module(f"tests.{path.parent.name}.mutants").MUTANTS)
    return found


MUTANTS = MUTANTS + _demo_mutants()
