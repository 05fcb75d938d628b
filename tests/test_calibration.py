"""Confidence maths: the logistic fit recovers a known relation; ECE measures miscalibration."""

import numpy as np

from indexer.calibration import Calibrator, expected_calibration_error, features, fit_logistic


def test_fit_recovers_a_separable_relation():
    rng = np.random.default_rng(0)
    top = rng.uniform(0.2, 1.0, 2000)
    truth = rng.uniform(size=2000) < 1 / (1 + np.exp(-(12 * top - 8)))
    x = np.array([features([t, t - 0.1]) for t in top])
    weights = fit_logistic(x, truth.astype(float))
    calibrator = Calibrator(tuple(weights))
    assert calibrator.confidence([0.95, 0.5]) > 0.9
    assert calibrator.confidence([0.3, 0.29]) < 0.1
    assert len(weights) == 4
    predicted = [calibrator.confidence([t, t - 0.1]) for t in top]
    assert expected_calibration_error(predicted, list(truth)) < 0.05


def test_ece_is_zero_when_confidence_equals_accuracy_and_large_when_not():
    assert expected_calibration_error([0.8] * 10, [True] * 8 + [False] * 2) < 1e-9
    assert expected_calibration_error([0.9] * 10, [False] * 10) > 0.89


def test_calibrator_round_trips_through_json():
    c = Calibrator((0.5, -1.0, 2.0, 1.0), threshold=0.6)
    assert Calibrator.from_json(c.to_json()) == c
