//! A*: a binary heap with lazy deletion; ties on `f` go to the lower node index.
//!
//! [`find_path_with`] knows nothing of grids: the caller gives the node count, a heuristic
//! and a successor function that offers each neighbour with the cost of the edge to it —
//! leaving an edge out forbids it. The open list is a min-heap of `(f, node)`: an improved
//! node is pushed again rather than decreased, and entries of nodes already closed are
//! skipped when popped. Equal `f` values pop the lower node index first, so a query always
//! yields the same path. Costs must be finite and non-negative.
//!
//! The scratch arrays ([`SearchScratch`]) are sized to the graph once and reused: a query
//! marks what it touches with its own generation number instead of clearing them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A path found by [`find_path_with`]: its nodes from start to goal, and its cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Path {
    /// The nodes, start first, goal last.
    pub nodes: Vec<u32>,
    /// The sum of the edge costs.
    pub cost: f32,
    /// How many nodes were closed on the way.
    pub expanded: u32,
}

/// What a search knows of one node, kept together so that a step touches one place.
#[derive(Clone, Copy, Debug, Default)]
struct NodeState {
    g: f32,
    /// The heuristic, computed once when the node is first seen.
    h: f32,
    parent: u32,
    /// `2·generation` when seen this query, `2·generation + 1` once closed.
    mark: u32,
}

/// Reusable search state for one graph size.
#[derive(Clone, Debug, Default)]
pub struct SearchScratch {
    nodes: Vec<NodeState>,
    generation: u32,
    /// `(f bits << 32) | node`: one integer orders by `f`, then by node.
    heap: BinaryHeap<Reverse<u64>>,
}

impl SearchScratch {
    fn begin(&mut self, nodes: usize) {
        if self.nodes.len() != nodes || self.generation >= u32::MAX / 2 - 1 {
            self.nodes = vec![NodeState::default(); nodes];
            self.generation = 0;
        }
        self.generation += 1;
        self.heap.clear();
    }
}

/// The heap key of a cost and a node: for finite `f ≥ 0` the bit pattern orders like the
/// number, and the node breaks ties.
fn key(f: f32, node: u32) -> u64 {
    (u64::from(f.max(0.0).to_bits()) << 32) | u64::from(node)
}

/// What an expansion offers its neighbours to: the successor function of
/// [`find_path_with`] calls [`Frontier::offer`] for every edge leaving the node expanded,
/// and may skip the cost of an edge to a node [`Frontier::is_closed`] says is done with.
pub struct Frontier<'a, H> {
    nodes: &'a mut [NodeState],
    heap: &'a mut BinaryHeap<Reverse<u64>>,
    heuristic: &'a H,
    from: u32,
    g: f32,
    seen: u32,
    closed: u32,
}

impl<H: Fn(u32) -> f32> Frontier<'_, H> {
    /// Whether the search is done with `m` (closed, or not a node): an edge to it changes nothing.
    #[inline]
    pub fn is_closed(&self, m: u32) -> bool {
        self.nodes.get(m as usize).is_none_or(|s| s.mark == self.closed)
    }

    /// The edge from the node expanded to `m` costs `cost`; a cost that is negative or not
    /// finite is no edge.
    #[inline]
    pub fn offer(&mut self, m: u32, cost: f32) {
        if !(0.0..f32::INFINITY).contains(&cost) {
            return;
        }
        let Some(next) = self.nodes.get_mut(m as usize) else { return };
        if next.mark == self.closed {
            return;
        }
        let candidate = self.g + cost;
        if next.mark == self.seen {
            if candidate >= next.g {
                return;
            }
        } else {
            next.h = (self.heuristic)(m);
            next.mark = self.seen;
        }
        next.g = candidate;
        next.parent = self.from;
        self.heap.push(Reverse(key(candidate + next.h, m)));
    }
}

/// The cheapest path from `start` to `goal` among `nodes` nodes (indices `0..nodes`), or
/// `None` when the goal cannot be reached. `successors(n, frontier)` offers every edge
/// leaving `n` with its cost ([`Frontier::offer`]); `heuristic(n)` estimates the cost from
/// `n` to the goal (an estimate above the true cost trades optimality for speed).
/// Out-of-range nodes give `None`.
pub fn find_path_with<H: Fn(u32) -> f32>(
    nodes: usize,
    start: u32,
    goal: u32,
    heuristic: H,
    mut successors: impl FnMut(u32, &mut Frontier<'_, H>),
    scratch: &mut SearchScratch,
) -> Option<Path> {
    if start as usize >= nodes || goal as usize >= nodes {
        return None;
    }
    scratch.begin(nodes);
    let seen = 2 * scratch.generation;
    let closed = seen + 1;
    let h = heuristic(start);
    scratch.nodes[start as usize] = NodeState { g: 0.0, h, parent: start, mark: seen };
    scratch.heap.push(Reverse(key(h, start)));
    let mut expanded = 0;
    let found = loop {
        let Some(Reverse(entry)) = scratch.heap.pop() else { break false };
        let n = entry as u32;
        let here = &mut scratch.nodes[n as usize];
        if here.mark == closed {
            continue;
        }
        here.mark = closed;
        let g = here.g;
        expanded += 1;
        if n == goal {
            break true;
        }
        let mut frontier = Frontier {
            nodes: &mut scratch.nodes,
            heap: &mut scratch.heap,
            heuristic: &heuristic,
            from: n,
            g,
            seen,
            closed,
        };
        successors(n, &mut frontier);
    };
    if !found {
        return None;
    }
    let mut path = vec![goal];
    let mut n = goal;
    while n != start {
        n = scratch.nodes[n as usize].parent;
        path.push(n);
    }
    path.reverse();
    Some(Path { nodes: path, cost: scratch.nodes[goal as usize].g, expanded })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Offers the edges of a small weighted graph (an edge list, both ways) leaving `n`.
    fn offer<H: Fn(u32) -> f32>(edges: &[(u32, u32, f32)], n: u32, f: &mut Frontier<'_, H>) {
        for &(a, b, c) in edges {
            if a == n {
                f.offer(b, c);
            }
            if b == n {
                f.offer(a, c);
            }
        }
    }

    #[test]
    fn the_cheapest_path_wins_over_the_shortest() {
        // 0→1→3 is two edges and costs 6; 0→2→3 is two edges and costs 1.
        let edges = [(0, 1, 1.0), (1, 3, 5.0), (0, 2, 0.5), (2, 3, 0.5)];
        let mut s = SearchScratch::default();
        let p = find_path_with(4, 0, 3, |_| 0.0, |n, f| offer(&edges, n, f), &mut s).unwrap();
        assert_eq!(p.nodes, [0, 2, 3]);
        assert_eq!(p.cost, 1.0);
        // Forbidding the edge (leaving it out) sends the path the other way.
        let edges = [(0, 1, 1.0), (1, 3, 5.0), (0, 2, 0.5)];
        let p = find_path_with(4, 0, 3, |_| 0.0, |n, f| offer(&edges, n, f), &mut s).unwrap();
        assert_eq!(p.nodes, [0, 1, 3]);
        assert_eq!(p.cost, 6.0);
    }

    #[test]
    fn ties_go_to_the_lower_index_every_time() {
        // Two equal routes 0→1→3 and 0→2→3.
        let edges = [(0, 1, 1.0), (0, 2, 1.0), (1, 3, 1.0), (2, 3, 1.0)];
        let mut s = SearchScratch::default();
        for _ in 0..3 {
            assert_eq!(find_path_with(4, 0, 3, |_| 0.0, |n, f| offer(&edges, n, f), &mut s).unwrap().nodes, [0, 1, 3]);
        }
        let edges = [(0, 2, 1.0), (0, 1, 1.0), (2, 3, 1.0), (1, 3, 1.0)];
        assert_eq!(
            find_path_with(4, 0, 3, |_| 0.0, |n, f| offer(&edges, n, f), &mut s).unwrap().nodes,
            [0, 1, 3],
            "edge order does not matter"
        );
    }

    #[test]
    fn unreachable_and_out_of_range_goals() {
        let edges = [(0, 1, 1.0), (2, 3, 1.0)];
        let mut s = SearchScratch::default();
        assert_eq!(find_path_with(4, 0, 3, |_| 0.0, |n, f| offer(&edges, n, f), &mut s), None);
        assert_eq!(find_path_with(4, 0, 9, |_| 0.0, |n, f| offer(&edges, n, f), &mut s), None);
        let p = find_path_with(4, 2, 2, |_| 0.0, |n, f| offer(&edges, n, f), &mut s).unwrap();
        assert_eq!((p.nodes, p.cost), (vec![2], 0.0));
        // Bad costs are edges that do not exist.
        let edges = [(0, 1, f32::NAN), (0, 2, -1.0), (0, 3, f32::INFINITY)];
        for goal in 1..4 {
            assert_eq!(find_path_with(4, 0, goal, |_| 0.0, |n, f| offer(&edges, n, f), &mut s), None);
        }
    }

    #[test]
    fn a_lazily_deleted_entry_does_not_close_a_node_early() {
        // 3 is first reached at cost 10 through 1, then improved to 3 through 2.
        let edges = [(0, 1, 1.0), (1, 3, 9.0), (0, 2, 2.0), (2, 3, 1.0), (3, 4, 1.0)];
        let mut s = SearchScratch::default();
        let p = find_path_with(5, 0, 4, |_| 0.0, |n, f| offer(&edges, n, f), &mut s).unwrap();
        assert_eq!((p.nodes, p.cost), (vec![0, 2, 3, 4], 4.0));
    }
}
