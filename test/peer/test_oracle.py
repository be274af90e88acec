"""The peer oracle's own machinery (CPU): the seeded choice of autotuned configs."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("fla")

import oracle  # noqa: E402
from cases import gpu_params  # noqa: E402


def test_an_autotuned_kernel_of_a_case_is_found_under_its_heuristics():
    cases, _ = gpu_params("fla")
    tuners = oracle._autotuners(cases["fla.mean_pooling"])  # (heuristics over autotune)
    assert list(tuners) == ["mean_pooling_fwd_kernel"]
    assert len(tuners["mean_pooling_fwd_kernel"].configs) > 1


def test_the_seeded_choice_runs_every_config_and_replays():
    calls = []

    def timings(seed):
        oracle._CONFIG_CHOICE.seed(seed)
        return [oracle._chosen_by_seed(lambda: calls.append(1), quantiles=(0.5, 0.2, 0.8))[0]
                for _ in range(16)]

    first = timings(1234)
    assert len(calls) == 16  # (each config is compiled and run once)
    assert timings(1234) == first
    assert timings(1235) != first
    # (the autotuner takes the least: over seeds, every config gets chosen)
    chosen = {min(range(16), key=timings(seed).__getitem__) for seed in range(200)}
    assert chosen == set(range(16))


def test_a_pinned_config_is_the_only_one_within_the_block():
    cases, _ = gpu_params("fla")
    case = cases["fla.chunk_delta_rule"]
    variants = oracle.config_variants(case)
    kernel, index = variants[-1]
    tuner = oracle._autotuners(case)[kernel]
    configs = list(tuner.configs)
    assert len({(k, i) for k, i in variants}) == len(variants) > 1
    with oracle.pinned_config(case, kernel, index) as config:
        assert tuner.configs == [configs[index]] == [config]
    assert tuner.configs == configs
