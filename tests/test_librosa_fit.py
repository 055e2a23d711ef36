"""PREBA's Librosa CPU audio pipeline (engine.stages.librosa): the pure formula, the one figure it is fitted on, the
default pipeline left alone, and the calibration discipline of the reproduction entries that run it."""

from __future__ import annotations

import math

import pytest

from engine.analytic import Context, build_design
from engine.analytic.pipeline import librosa_fit
from engine.reproduce import preba
from engine.reproduce.entry import IN_SAMPLE, OUT_OF_SAMPLE
from engine.seed.papers import paper_results
from engine.scenario import PreprocessingSpec, load_scenario
from engine.stages.librosa import FIT_CLIP_S, FIT_ID, FIT_SCENARIO, fit_librosa, librosa_ms_per_audio_s
from engine.stages.preprocess import preprocess_stage
from engine.studies.preprocessing import preprocessing_study

AUDIO = {"name": "citrinet", "preprocess": "audio", "request_bytes": 224000, "input_kind": "variable"}
IMAGE = {"name": "efficientnet-b0", "preprocess": "image", "request_bytes": 602112, "input_kind": "fixed"}
FIT_KEY = ("librosa-fit",)  # the context memo key engine.analytic.pipeline.librosa_fit uses


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def test_the_formula_is_cores_over_audio_seconds_per_second():
    # 393 cores keeping 1,000 clips/s of 2.5 s busy: 393 core-s per 2,500 audio s = 157.2 ms per audio s per core
    assert librosa_ms_per_audio_s(393, 1000, 2.5) == pytest.approx(157.2)
    assert librosa_ms_per_audio_s(393, 2000, 2.5) == pytest.approx(78.6)  # twice the clips: half the cost each
    for bad in ((0, 1000, 2.5), (393, 0, 2.5), (393, 1000, -1)):
        with pytest.raises(ValueError):
            librosa_ms_per_audio_s(*bad)


def test_the_fit_reads_its_one_figure_from_paper_results(ctx):
    fit, figure = librosa_fit(ctx), paper_results()[FIT_ID]
    assert fit.cores == figure.value and fit.clip_s == FIT_CLIP_S
    assert "Fig 8" in fit.source and "Fig 8" in figure.where
    assert fit.ms_per_audio_s == pytest.approx(librosa_ms_per_audio_s(figure.value, fit.clips_per_s, FIT_CLIP_S))
    assert librosa_fit(ctx) is fit  # once per context


def test_the_fit_scenario_is_the_server_preba_entries_run():
    """FIT_SCENARIO and engine.reproduce.preba's CitriNet Sec 3 server differ only in name and preprocessing."""
    own = preba._own("citrinet", "none", preba.SEC3_AUDIO_S)
    strip = lambda d: {k: v for k, v in d.items() if k not in ("name", "preprocessing")}  # noqa: E731
    assert strip(own) == strip(FIT_SCENARIO)
    assert FIT_SCENARIO["preprocessing"] == {"device": "none"}


def test_the_default_audio_pipeline_is_unchanged_and_librosa_is_dearer(store):
    points = store.table("preprocessing_points")
    fit = fit_librosa(393, 9000, "test figure")
    published = preprocess_stage(PreprocessingSpec(device="cpu"), AUDIO, points, 30, audio_s=5.0)
    again = preprocess_stage(PreprocessingSpec(device="cpu"), AUDIO, points, 30, audio_s=5.0, librosa=fit)
    assert published.service_s == again.service_s  # a fit passed in does not touch the default pipeline
    assert "published decode+resample and mel rows" in " ".join(published.notes)
    lib = preprocess_stage(PreprocessingSpec(device="cpu", cpu_audio_pipeline="librosa"), AUDIO, points, 30,
                           audio_s=5.0, librosa=fit)
    assert lib.service_s == pytest.approx(fit.ms_per_audio_s * 5.0 / 1e3)
    assert lib.capacity_rps == pytest.approx(30 / lib.service_s)
    assert "Librosa" in " ".join(lib.notes) and "test figure" in " ".join(lib.notes)
    assert lib.service_s > 10 * published.service_s


def test_librosa_needs_its_fit_and_prices_audio_only(store):
    points = store.table("preprocessing_points")
    spec = PreprocessingSpec(device="cpu", cpu_audio_pipeline="librosa")
    with pytest.raises(ValueError, match="librosa"):
        preprocess_stage(spec, AUDIO, points, 30, audio_s=5.0)
    image = preprocess_stage(spec, IMAGE, points, 30)
    assert image.service_s == preprocess_stage(PreprocessingSpec(device="cpu"), IMAGE, points, 30).service_s
    assert any("audio only" in n for n in image.notes)
    override = preprocess_stage(spec.model_copy(update={"ms_per_item": 7.0}), AUDIO, points, 30, audio_s=5.0)
    assert override.service_s == pytest.approx(7e-3)  # an explicit override still wins


def test_a_librosa_design_is_priced_by_the_fit(ctx):
    data = preba._own("conformer", "cpu", 5.0)
    assert data["preprocessing"]["cpu_audio_pipeline"] == "librosa"
    design = build_design(load_scenario(data, ctx.book), ctx)
    host = next(s for s in design.host_stages if s.name == "host_cpu")
    assert host.breakdown_s["preprocess_cpu"] == pytest.approx(librosa_fit(ctx).ms_per_audio_s * 5.0 / 1e3)
    plain = dict(data, preprocessing={"device": "cpu"})
    base = build_design(load_scenario(plain, ctx.book), ctx)
    assert next(s for s in base.host_stages if s.name == "host_cpu").breakdown_s["preprocess_cpu"] < \
        host.breakdown_s["preprocess_cpu"] / 10


def test_the_fitted_figure_comes_back_in_sample(ctx):
    """preba-citrinet-cores reads the same GPU throughput the fit divided by: 393 cores again, and in-sample."""
    entry = next(e for e in preba.ENTRIES if e.id == FIT_ID)
    assert entry.sample == IN_SAMPLE
    assert entry.compute(ctx.fresh()) == pytest.approx(paper_results()[FIT_ID].value, rel=1e-9)


@pytest.mark.parametrize("entry", [e for e in preba.ENTRIES if not (e.simulator or e.slow)], ids=lambda e: e.id)
def test_an_entry_names_the_librosa_fit_exactly_when_it_runs_it(entry, ctx):
    """Calibration discipline by what runs, not by what is declared: an entry whose computation asked for the
    Librosa fit lists FIT_ID in fitted_on (so it cannot claim out-of-sample on Fig 8), and one that never asks
    does not list it (so it is not hidden in-sample)."""
    fresh = ctx.fresh()
    value = entry.compute(fresh)
    assert math.isfinite(value)
    assert (FIT_KEY in fresh._memo) == (FIT_ID in entry.fitted_on), entry.id
    if FIT_ID in entry.fitted_on and "fig 8" not in entry.result.figures:
        assert entry.sample == OUT_OF_SAMPLE or any(f != FIT_ID for f in entry.fitted_on), entry.id


def test_the_preprocessing_study_shows_the_librosa_cost_first(ctx):
    study = preprocessing_study(load_scenario(preba.CITRINET_SEC3, ctx.book), ctx)
    first = study.cpu_costs[0]
    assert first.prefer == "derived" and "Librosa" in first.basis
    assert first.ms_per_item == pytest.approx(librosa_fit(ctx).ms_per_audio_s * preba.SEC3_AUDIO_S)
    assert study.scaling[-1].preprocessing_cores == pytest.approx(393, rel=1e-9)
    assert [e.prefer for e in study.cpu_costs[1:]] == ["measured", "published"]  # the rows' estimates still shown
