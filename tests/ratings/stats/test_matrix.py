# SPDX-License-Identifier: GPL-3.0-or-later
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratings.stats import (
    category_counts,
    encode_labels,
    long_to_matrix,
    matrix_to_long,
    ratings_per_item,
)


class TestLongToMatrix:
    def test_it_pivots_long_rows_into_an_items_by_raters_matrix(self):
        result = long_to_matrix(items=["j2", "j1", "j1", "j2"], raters=["bo", "al", "bo", "al"], values=[3, 1, 2, 0])
        assert result.item_ids.tolist() == ["j1", "j2"]
        assert result.rater_ids.tolist() == ["al", "bo"]
        np.testing.assert_array_equal(result.values, [[1, 2], [0, 3]])

    def test_it_leaves_unrated_cells_as_nan(self):
        result = long_to_matrix(items=[1, 2, 2], raters=[1, 1, 2], values=[0, 1, 2])
        assert np.isnan(result.values[0, 1])
        assert result.n_items == 2 and result.n_raters == 2

    def test_it_treats_nan_values_as_not_rated(self):
        result = long_to_matrix(items=[1, 1], raters=[1, 2], values=[2.0, np.nan])
        assert np.isnan(result.values[0, 1])

    def test_it_refuses_duplicate_cells_by_default(self):
        with pytest.raises(ValueError, match="more than once"):
            long_to_matrix(items=[1, 1], raters=[7, 7], values=[1, 2])

    def test_it_averages_or_keeps_the_last_duplicate_on_request(self):
        mean = long_to_matrix(items=[1, 1, 1], raters=[7, 7, 8], values=[1, 2, 3], duplicates="mean")
        last = long_to_matrix(items=[1, 1, 1], raters=[7, 7, 8], values=[1, 2, 3], duplicates="last")
        assert mean.values[0, 0] == 1.5
        assert last.values[0, 0] == 2.0

    def test_it_rejects_empty_and_mismatched_input(self):
        with pytest.raises(ValueError, match="empty"):
            long_to_matrix(items=[], raters=[], values=[])
        with pytest.raises(ValueError, match="same length"):
            long_to_matrix(items=[1, 2], raters=[1], values=[1, 2])
        with pytest.raises(ValueError, match="numeric"):
            long_to_matrix(items=[1], raters=[1], values=["funny"])

    def test_it_handles_a_million_rows_without_python_loops(self):
        rng = np.random.default_rng(0)
        n_items, n_raters = 150_000, 7
        items = np.repeat(np.arange(n_items), n_raters)
        raters = np.tile(np.arange(n_raters), n_items)
        values = rng.integers(0, 4, items.size).astype(float)
        result = long_to_matrix(items=items, raters=raters, values=values)
        assert result.values.shape == (n_items, n_raters)
        np.testing.assert_array_equal(result.values.ravel(), values)

    @settings(max_examples=40, deadline=None)
    @given(st.data())
    def test_it_round_trips_through_matrix_to_long(self, data):
        n_items = data.draw(st.integers(1, 8))
        n_raters = data.draw(st.integers(1, 5))
        cells = data.draw(
            st.lists(
                st.tuples(st.integers(0, n_items - 1), st.integers(0, n_raters - 1)),
                min_size=1,
                max_size=30,
                unique=True,
            )
        )
        values = data.draw(st.lists(st.integers(0, 3), min_size=len(cells), max_size=len(cells)))
        items, raters = zip(*cells, strict=True)
        built = long_to_matrix(items=items, raters=raters, values=values)
        i, r, v = matrix_to_long(built.values)
        back = {(built.item_ids[a], built.rater_ids[b]): val for a, b, val in zip(i, r, v, strict=True)}
        assert back == {cell: float(val) for cell, val in zip(cells, values, strict=True)}


class TestCategoryCounts:
    def test_it_counts_each_label_per_item_in_the_declared_order(self):
        counts = category_counts([[0, 0, 3], [np.nan, 2, 2]], categories=[3, 2, 1, 0])
        np.testing.assert_array_equal(counts, [[1, 0, 0, 2], [0, 2, 0, 0]])

    def test_it_rejects_values_outside_the_label_set(self):
        with pytest.raises(ValueError, match="outside the declared set"):
            category_counts([[0, 4]], categories=[0, 1, 2, 3])

    def test_it_counts_ratings_per_item(self):
        np.testing.assert_array_equal(ratings_per_item([[1, np.nan], [2, 3]]), [1, 2])


class TestEncodeLabels:
    def test_it_codes_text_labels_by_their_position_and_none_as_missing(self):
        codes = encode_labels(["B", "TIE", None, "A"], ["A", "B", "TIE"])
        np.testing.assert_array_equal(codes, [1, 2, np.nan, 0])

    def test_it_rejects_a_label_outside_the_set(self):
        with pytest.raises(ValueError, match="not in the label set"):
            encode_labels(["A", "C"], ["A", "B"])
