"""The four SmartVector signals, checked against hand-computed values."""

import math

import numpy as np
import pytest

from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.smartvector.signals.confidence import (ConfidenceParams, access_reinforced, decayed_confidence,
                                                  feedback_adjusted, is_dormant, live_confidence)
from smartvector_bench.systems.smartvector.signals.fusion import Weights, fuse, weights_from_config
from smartvector_bench.systems.smartvector.signals.relational import relational_signal
from smartvector_bench.systems.smartvector.signals.temporal import temporal_signal

INF = np.inf
P = ConfidenceParams()


def a(*xs):
    return np.array(xs, dtype=np.float64)


# ---- temporal --------------------------------------------------------------------------------------------

def test_temporal_half_life_decay_inside_window():
    t = temporal_signal(a(0.0), a(0.0), a(INF), a(0.0, 30.0, 60.0, 90.0))
    # 2^0 = 1, 2^-1 = 0.5, 2^-2 = 0.25, 2^-3 = 0.125
    assert t.shape == (4, 1)
    np.testing.assert_allclose(t[:, 0], [1.0, 0.5, 0.25, 0.125], rtol=0, atol=1e-12)


def test_temporal_outside_window_is_expired_score():
    # valid [0, 50): at 50 (end is exclusive) and after -> 0.05; at 49 -> 2^(-49/30)
    t = temporal_signal(a(0.0), a(0.0), a(50.0), a(49.0, 50.0, 500.0))[:, 0]
    assert t[0] == pytest.approx(2 ** (-49 / 30))  # 0.32290...
    assert t[1] == 0.05 and t[2] == 0.05


def test_temporal_not_yet_valid_is_outside():
    # created 0, valid from 10: at t=5 the vector is announced but not in force -> 0.05
    t = temporal_signal(a(0.0), a(10.0), a(INF), a(5.0, 10.0))[:, 0]
    assert t[0] == 0.05
    assert t[1] == pytest.approx(2 ** (-10 / 30))  # in force at 10: age 10 -> 0.7937...


def test_temporal_age_clamped_at_zero():
    # created at 10, valid from 0 (backdated), queried at 5: age = max(5 - 10, 0) = 0 -> 1.0 (not 2^(5/30))
    t = temporal_signal(a(10.0), a(0.0), a(INF), a(5.0))
    assert t[0, 0] == 1.0


def test_temporal_custom_half_life_and_expired_score_and_shape():
    created = a(0.0, 20.0)
    t = temporal_signal(created, a(0.0, 0.0), a(INF, 30.0), a(20.0, 40.0), half_life_days=10.0,
                        expired_score=0.2)
    # row t=20: v0 age 20/H10 -> 0.25; v1 age 0 -> 1
    # row t=40: v0 age 40 -> 2^-4 = 0.0625; v1 past valid_to 30 -> 0.2
    np.testing.assert_allclose(t, [[0.25, 1.0], [0.0625, 0.2]], rtol=0, atol=1e-12)


# ---- confidence ------------------------------------------------------------------------------------------

def test_confidence_defaults_match_reference_table():
    assert (P.half_life_days, P.min_confidence, P.positive_boost, P.negative_penalty, P.access_reinforcement,
            P.dormant_threshold) == (30.0, 0.01, 0.03, 0.08, 0.01, 0.15)


def test_decayed_confidence():
    out = decayed_confidence(a(0.9, 0.9, 0.9, 0.9), a(0.0, 60.0, 300.0, -20.0), P)
    # 0.9; 0.9 * 2^-2 = 0.225; 0.9 * 2^-10 = 0.000879 -> floor 0.01; negative age clamped -> 0.9
    np.testing.assert_allclose(out, [0.9, 0.225, 0.01, 0.9], rtol=0, atol=1e-12)


def test_decayed_confidence_uses_configured_half_life():
    p = ConfidenceParams(half_life_days=60.0)
    assert decayed_confidence(a(0.8), a(60.0), p)[0] == pytest.approx(0.4)  # 0.8 * 2^-1


def test_feedback_adjusted():
    out = feedback_adjusted(a(0.5, 0.99, 0.05, 0.5), a(2, 1, 0, 0), a(1, 0, 1, 0), P)
    # 0.5 + 2*0.03 - 0.08 = 0.48; 0.99 + 0.03 = 1.02 -> 1; 0.05 - 0.08 -> 0.01; unchanged 0.5
    np.testing.assert_allclose(out, [0.48, 1.0, 0.01, 0.5], rtol=0, atol=1e-12)


def test_access_reinforced():
    out = access_reinforced(a(0.5, 0.999, 0.5), a(9, 10, 0), P)
    # 0.5 + 0.01 * ln 10 = 0.5230258509; 0.999 + 0.01 * ln 11 = 1.0229 -> 1; ln 1 = 0 -> 0.5
    np.testing.assert_allclose(out, [0.5230258509299405, 1.0, 0.5], rtol=0, atol=1e-12)


def test_live_confidence_order_decay_then_feedback_then_access():
    base, created = a(0.5, 0.9, 0.9), a(0.0, 0.0, 0.0)
    pos, neg, acc = a(10, 1, 0), a(0, 0, 1), a(0, 0, math.e - 1)
    c = live_confidence(base, created, a(30.0, 300.0), pos, neg, acc, P)
    assert c.shape == (2, 3)
    # t=30: v0 decay first 0.25 + 10*0.03 = 0.55 (feedback first would give (0.5+0.3)/2 = 0.4)
    #       v1 0.45 + 0.03 = 0.48;  v2 0.45 - 0.08 = 0.37, + 0.01*ln(e) = 0.38
    # t=300: v0 0.5*2^-10 -> 0.01, + 0.3 = 0.31;  v1 0.01 + 0.03 = 0.04;  v2 0.01 - 0.08 -> 0.01, + 0.01 = 0.02
    np.testing.assert_allclose(c, [[0.55, 0.48, 0.38], [0.31, 0.04, 0.02]], rtol=0, atol=1e-12)


def test_is_dormant_threshold_is_strict():
    assert is_dormant(a(0.15, 0.1499, 0.5), P).tolist() == [False, True, False]


# ---- relational ------------------------------------------------------------------------------------------

def test_relational_signal():
    r = relational_signal(np.array([0, 1, 3, 19, 20, 100]))
    # 0 -> 0; 0.1 ln 2 = 0.0693147; 0.1 ln 4 = 0.1386294; 0.1 ln 20 = 0.2995732 (< cap); 0.1 ln 21 = 0.304 -> 0.3
    np.testing.assert_allclose(r, [0.0, 0.06931471805599453, 0.13862943611198905, 0.29957322735539910, 0.3, 0.3],
                               rtol=0, atol=1e-12)


def test_relational_custom_parameters():
    r = relational_signal(np.array([0, 1, 7]), per_edge=0.5, cap=1.0)
    # 0; 0.5 ln 2 = 0.3465736; 0.5 ln 8 = 1.0397 -> cap 1.0
    np.testing.assert_allclose(r, [0.0, 0.34657359027997264, 1.0], rtol=0, atol=1e-12)


# ---- fusion ----------------------------------------------------------------------------------------------

def test_paper_weights_default():
    w = Weights()
    assert (w.semantic, w.temporal, w.confidence, w.relational) == (0.35, 0.25, 0.25, 0.15)
    assert w.total() == pytest.approx(1.0)


def test_fuse_paper_weights_hand_value():
    s = fuse(Weights(), a(0.8), a(0.5), a(0.225), a(0.13862943611198905))
    # 0.35*0.8 + 0.25*0.5 + 0.25*0.225 + 0.15*0.1386294 = 0.28 + 0.125 + 0.05625 + 0.0207944 = 0.4820444
    assert s[0] == pytest.approx(0.48204441541679836, abs=1e-12)


def test_fuse_normalises_by_weight_sum():
    s = fuse(Weights(1.0, 1.0, 0.0, 0.0), a(0.6), a(0.2), a(0.9), a(0.3))
    assert s[0] == pytest.approx(0.4, abs=1e-12)  # (0.6 + 0.2) / 2
    s2 = fuse(Weights(2.0, 0.0, 0.0, 0.0), a(0.7), a(0.2), a(0.9), a(0.3))
    assert s2[0] == pytest.approx(0.7, abs=1e-12)  # 2*0.7 / 2


def test_fuse_clips_cosine_to_unit_interval():
    s = fuse(Weights(), a(-0.5, 1.2), a(1.0, 0.0), a(1.0, 0.0), a(0.0, 0.0))
    # negative cosine -> 0: 0 + 0.25 + 0.25 + 0 = 0.5;  cosine 1.2 -> 1: 0.35
    np.testing.assert_allclose(s, [0.5, 0.35], rtol=0, atol=1e-12)


def test_fuse_broadcasts_q_by_n():
    sem = np.array([[1.0, 0.0], [0.5, 0.5]])
    s = fuse(Weights(1.0, 0.0, 1.0, 0.0), sem, np.zeros((2, 2)), np.array([[0.0, 1.0], [0.5, 0.5]]),
             np.zeros((2, 2)))
    np.testing.assert_allclose(s, [[0.5, 0.5], [0.5, 0.5]], rtol=0, atol=1e-12)  # (s + c) / 2


def test_weights_from_config_valid_and_missing_keys_are_zero():
    assert weights_from_config({"semantic": 1, "temporal": 0.5}, "w") == Weights(1.0, 0.5, 0.0, 0.0)
    assert weights_from_config({"semantic": 0.35, "temporal": 0.25, "confidence": 0.25, "relational": 0.15},
                               "w") == Weights()


@pytest.mark.parametrize("cfg, key", [
    ({"semantic": 0.5, "temporal": -0.1}, "w.temporal=-0.1"),
    ({"semantic": 0.5, "semntic": 0.1}, "w.semntic:"),
    ({"semantic": "high"}, "w.semantic='high'"),
    ({"semantic": True}, "w.semantic=True"),
    ({"semantic": 0.0, "temporal": 0.0, "confidence": 0.0, "relational": 0.0}, "w: at least one"),
    ({}, "w: at least one"),
])
def test_weights_from_config_errors_name_the_key(cfg, key):
    with pytest.raises(BenchError) as exc:
        weights_from_config(cfg, "w")
    assert str(exc.value).startswith(key)
