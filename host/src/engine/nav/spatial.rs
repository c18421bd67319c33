//! A spatial grid for target queries: who is within a radius of a point, without looking at everyone.
//!
//! The game fills it once a tick (clear, then insert each entity with its id and position)
//! and asks it [`SpatialGrid::query_radius`]. Cells are squares of [`SpatialGrid::cell`]
//! world units keyed by their integer coordinates in a `BTreeMap`, so nothing depends on a
//! hash order; answers are sorted by id.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// The default cell side, world units.
pub const DEFAULT_CELL: f32 = 128.0;

/// An entry: an id the game chose and a position.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpatialEntry {
    /// The game's id for the entity.
    pub id: u32,
    /// Its position, world units.
    pub pos: [f32; 2],
}

/// The grid (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct SpatialGrid {
    cell: f32,
    cells: BTreeMap<(i32, i32), Vec<SpatialEntry>>,
    len: usize,
}

impl Default for SpatialGrid {
    fn default() -> Self {
        SpatialGrid::new(DEFAULT_CELL)
    }
}

impl SpatialGrid {
    /// An empty grid of `cell`-sided cells (a side that is not a positive number gives [`DEFAULT_CELL`]).
    pub fn new(cell: f32) -> SpatialGrid {
        let cell = if cell.is_finite() && cell > 0.0 { cell } else { DEFAULT_CELL };
        SpatialGrid { cell, cells: BTreeMap::new(), len: 0 }
    }

    /// The cell side, world units.
    pub fn cell(&self) -> f32 {
        self.cell
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets every entry.
    pub fn clear(&mut self) {
        self.cells.clear();
        self.len = 0;
    }

    fn key(&self, p: [f32; 2]) -> Option<(i32, i32)> {
        let (x, y) = ((p[0] / self.cell).floor(), (p[1] / self.cell).floor());
        let ok = |v: f32| v.is_finite() && v.abs() < i32::MAX as f32;
        (ok(x) && ok(y)).then_some((x as i32, y as i32))
    }

    /// Adds an entry; a position that is not finite is not added (returns `false`).
    pub fn insert(&mut self, id: u32, pos: [f32; 2]) -> bool {
        let Some(key) = self.key(pos) else { return false };
        self.cells.entry(key).or_default().push(SpatialEntry { id, pos });
        self.len += 1;
        true
    }

    /// The entries within `radius` of `center` (distance ≤ radius), sorted by id.
    pub fn query_radius(&self, center: [f32; 2], radius: f32) -> Vec<SpatialEntry> {
        let mut out = Vec::new();
        let r = radius.max(0.0);
        let (Some(lo), Some(hi)) = (self.key([center[0] - r, center[1] - r]), self.key([center[0] + r, center[1] + r]))
        else {
            return out;
        };
        let r2 = r * r;
        // Scan the cells in range, or every occupied cell when that is fewer.
        let span = (i64::from(hi.0) - i64::from(lo.0) + 1) * (i64::from(hi.1) - i64::from(lo.1) + 1);
        let mut take = |entries: &Vec<SpatialEntry>| {
            for e in entries {
                let (dx, dy) = (e.pos[0] - center[0], e.pos[1] - center[1]);
                if dx * dx + dy * dy <= r2 {
                    out.push(*e);
                }
            }
        };
        if span as usize > self.cells.len() {
            for (&(x, y), entries) in &self.cells {
                if (lo.0..=hi.0).contains(&x) && (lo.1..=hi.1).contains(&y) {
                    take(entries);
                }
            }
        } else {
            for y in lo.1..=hi.1 {
                for x in lo.0..=hi.0 {
                    if let Some(entries) = self.cells.get(&(x, y)) {
                        take(entries);
                    }
                }
            }
        }
        out.sort_by_key(|e| e.id);
        out
    }

    /// The grid for [`crate::engine::debug::debug_json`]: cell size, entries, occupied cells
    /// and the fullest cell.
    pub fn debug_json(&self) -> Value {
        let fullest = self.cells.values().map(Vec::len).max().unwrap_or(0);
        json!({
            "cellSize": self.cell,
            "entries": self.len,
            "occupiedCells": self.cells.len(),
            "fullestCell": fullest,
            "cells": self.cells.iter().map(|(&(x, y), e)| json!([x, y, e.len()])).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_finds_exactly_the_entries_in_range_sorted_by_id() {
        let mut g = SpatialGrid::new(10.0);
        for (id, pos) in [(7, [5.0, 5.0]), (3, [14.0, 5.0]), (9, [-30.0, 0.0]), (1, [5.0, 16.0]), (4, [100.0, 100.0])] {
            assert!(g.insert(id, pos));
        }
        assert!(!g.insert(5, [f32::NAN, 0.0]));
        assert_eq!(g.len(), 5);
        let ids = |v: Vec<SpatialEntry>| v.into_iter().map(|e| e.id).collect::<Vec<_>>();
        assert_eq!(ids(g.query_radius([5.0, 5.0], 11.0)), [1, 3, 7]);
        assert_eq!(ids(g.query_radius([5.0, 5.0], 9.0)), [3, 7], "9 away is in, 11 is out");
        assert_eq!(ids(g.query_radius([5.0, 5.0], 1e9)), [1, 3, 4, 7, 9], "a huge radius scans occupied cells only");
        assert!(g.query_radius([f32::INFINITY, 0.0], 5.0).is_empty());
        g.clear();
        assert!(g.is_empty() && g.query_radius([5.0, 5.0], 100.0).is_empty());
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn queries_agree_with_a_plain_scan(
                points in prop::collection::vec((-500.0f32..500.0, -500.0f32..500.0), 0..60),
                center in (-600.0f32..600.0, -600.0f32..600.0),
                radius in 0.0f32..400.0,
                cell in 5.0f32..200.0,
            ) {
                let mut g = SpatialGrid::new(cell);
                for (i, p) in points.iter().enumerate() {
                    g.insert(i as u32, [p.0, p.1]);
                }
                let got: Vec<u32> = g.query_radius([center.0, center.1], radius).into_iter().map(|e| e.id).collect();
                let want: Vec<u32> = points.iter().enumerate()
                    .filter(|(_, p)| (p.0 - center.0).powi(2) + (p.1 - center.1).powi(2) <= radius * radius)
                    .map(|(i, _)| i as u32).collect();
                prop_assert_eq!(got, want);
            }
        }
    }
}
