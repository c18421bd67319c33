//! Statistics (port 14): the cells, rows, heads and updates on the wire, [`StatTable`] (the host's tables and their deltas) and [`StatView`] (what a client shows).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use super::wire::{Part, Payload, Unread, present};
use super::{MetaError, STAT_DATA};

/// What a stat cell shows: a string or a number. The empty string is an empty cell.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StatValue {
    /// A string; `""` clears the cell.
    Text(String),
    /// A number (always finite).
    Number(Number),
}

impl StatValue {
    /// The empty cell, `""`.
    pub fn empty() -> Self {
        Self::Text(String::new())
    }

    /// Whether this is the empty cell `""`.
    pub fn is_empty(&self) -> bool {
        matches!(self, Self::Text(t) if t.is_empty())
    }
}

impl From<&str> for StatValue {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<String> for StatValue {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<Number> for StatValue {
    fn from(n: Number) -> Self {
        Self::Number(n)
    }
}

macro_rules! stat_value_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for StatValue {
            fn from(n: $t) -> Self {
                Self::Number(Number::from(n))
            }
        }
    )*};
}
stat_value_from_int!(i32, u32, i64, u64);

impl fmt::Display for StatValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Text(t) => f.write_str(t),
            Self::Number(n) => write!(f, "{n}"),
        }
    }
}

/// One cell of a stat row or head on the wire.
///
/// `Set` writes the value (`Set(StatValue::empty())`, i.e. `""`, clears the cell);
/// `Keep` leaves the cell as it is and is written `null` (the spec's "absent" cell).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StatCell {
    /// `null`: leave the cell unchanged.
    Keep,
    /// A string or number: show it.
    Set(StatValue),
}

impl StatCell {
    const PART: Part = Part { what: "stat cell", expected: "a string, a number or null" };

    /// The clearing cell, `""`.
    pub fn clear() -> Self {
        Self::Set(StatValue::empty())
    }
}

/// Reads each cell on its own, so that a bad one is a stat cell error.
fn read_cells(cells: Vec<Unread>) -> Result<Vec<StatCell>, MetaError> {
    cells.into_iter().map(|cell| StatCell::PART.read(cell)).collect()
}

/// A body row of a stat table: `[rowId, tableNo, [cells…] | null, tbodyNo]`; `null` cells remove the row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(into = "RowForm<StatCell>")]
pub struct StatRow {
    /// The row id (a player's id for player rows).
    pub id: u32,
    /// The table number.
    pub table: u8,
    /// The cells, or `None` to remove the row.
    pub cells: Option<Vec<StatCell>>,
    /// The tbody the row is in.
    pub tbody: u8,
}

impl StatRow {
    const PART: Part = Part {
        what: "stat row",
        expected: "[rowId, tableNo, [cells…] or null, tbodyNo] with integers rowId: u32, tableNo, tbodyNo: u8",
    };

    /// Reads a row, then its cells (each on its own).
    fn read(value: Value) -> Result<Self, MetaError> {
        let RowForm(id, table, cells, tbody) = Self::PART.read::<RowForm<Unread>>(value)?;
        Ok(Self { id, table, cells: cells.map(read_cells).transpose()?, tbody })
    }
}

/// `[rowId, tableNo, [cells…] | null, tbodyNo]`; the cells are [`StatCell`]s when written,
/// [`Unread`] when read.
#[derive(Serialize, Deserialize)]
struct RowForm<C>(u32, u8, Option<Vec<C>>, u8);

impl From<StatRow> for RowForm<StatCell> {
    fn from(row: StatRow) -> Self {
        Self(row.id, row.table, row.cells, row.tbody)
    }
}

/// A head row of a stat table: `[tableNo, [cells…], headRowNo]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(into = "HeadForm<StatCell>")]
pub struct StatHead {
    /// The table number.
    pub table: u8,
    /// The cells.
    pub cells: Vec<StatCell>,
    /// The row of the table head.
    pub row: u8,
}

impl StatHead {
    const PART: Part =
        Part { what: "stat head", expected: "[tableNo, [cells…], headRowNo] with integers tableNo, headRowNo: u8" };

    /// Reads a head, then its cells (each on its own).
    fn read(value: Value) -> Result<Self, MetaError> {
        let HeadForm(table, cells, row) = Self::PART.read::<HeadForm<Unread>>(value)?;
        Ok(Self { table, cells: read_cells(cells)?, row })
    }
}

/// `[tableNo, [cells…], headRowNo]`; the cells are [`StatCell`]s when written, [`Unread`] when read.
#[derive(Serialize, Deserialize)]
struct HeadForm<C>(u8, Vec<C>, u8);

impl From<StatHead> for HeadForm<StatCell> {
    fn from(head: StatHead) -> Self {
        Self(head.table, head.cells, head.row)
    }
}

/// A statistics message (port 14): `[tBodies, tHead]` or `[tBodies, tHead, fullUpdate]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(into = "UpdateForm<Vec<StatRow>, Vec<StatHead>>")]
pub struct StatUpdate {
    /// Body rows, applied in order.
    pub bodies: Vec<StatRow>,
    /// Head rows.
    pub heads: Vec<StatHead>,
    /// The full-update flag, written only when `Some`.
    pub full: Option<bool>,
}

impl StatUpdate {
    const PART: Part =
        Part { what: "stat update", expected: "[[rows…], [heads…]] or [[rows…], [heads…], fullUpdate]" };
}

/// `[[rows…], [heads…]]` or `[[rows…], [heads…], full]`. Read with both lists [`Unread`], so
/// that the rows are read, each on its own, before the heads' list is looked at.
#[derive(Serialize, Deserialize)]
struct UpdateForm<R, H>(
    R,
    H,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")] Option<bool>,
);

impl From<StatUpdate> for UpdateForm<Vec<StatRow>, Vec<StatHead>> {
    fn from(update: StatUpdate) -> Self {
        Self(update.bodies, update.heads, update.full)
    }
}

impl Payload<STAT_DATA> for StatUpdate {
    fn read(value: Value) -> Result<Self, MetaError> {
        let UpdateForm(bodies, heads, full) = Self::PART.read::<UpdateForm<Unread, Unread>>(value)?;
        let bodies =
            Self::PART.read::<Vec<Unread>>(bodies)?.into_iter().map(StatRow::read).collect::<Result<_, _>>()?;
        let heads = Self::PART.read::<Vec<Unread>>(heads)?.into_iter().map(StatHead::read).collect::<Result<_, _>>()?;
        Ok(Self { bodies, heads, full })
    }
}

/// A player's row with the engine's default columns, [`PLAYER_COLUMNS`](super::PLAYER_COLUMNS): `[name, status, score, deaths, latency]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlayerStat {
    /// The nick.
    pub name: String,
    /// The game's status text (may be empty).
    pub status: String,
    /// The score.
    pub score: i64,
    /// Deaths.
    pub deaths: u32,
    /// Smoothed round-trip latency, in milliseconds.
    pub latency_ms: u32,
}

impl PlayerStat {
    /// The row's cells, in [`PLAYER_COLUMNS`](super::PLAYER_COLUMNS) order.
    pub fn cells(&self) -> Vec<StatValue> {
        vec![
            self.name.as_str().into(),
            self.status.as_str().into(),
            self.score.into(),
            self.deaths.into(),
            self.latency_ms.into(),
        ]
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct HeadState {
    table: u8,
    row: u8,
    cells: Vec<StatValue>,
    /// Cells as last broadcast, `None` if never.
    sent: Option<Vec<StatValue>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct RowState {
    table: u8,
    id: u32,
    tbody: u8,
    /// `None`: removed, the removal not yet broadcast.
    cells: Option<Vec<StatValue>>,
    /// Tbody and cells as last broadcast, `None` if never.
    sent: Option<(u8, Vec<StatValue>)>,
}

fn set_all(cells: &[StatValue]) -> Vec<StatCell> {
    cells.iter().cloned().map(StatCell::Set).collect()
}

/// The cells that turn `before` into `now`, unchanged ones `Keep` and trailing `Keep`s
/// cut; a cell past a row's end counts as empty.
fn changed_cells(before: &[StatValue], now: &[StatValue]) -> Vec<StatCell> {
    let empty = StatValue::empty();
    let mut cells: Vec<StatCell> = (0..before.len().max(now.len()))
        .map(|i| {
            let now = now.get(i).unwrap_or(&empty);
            if before.get(i).unwrap_or(&empty) == now { StatCell::Keep } else { StatCell::Set(now.clone()) }
        })
        .collect();
    while cells.last() == Some(&StatCell::Keep) {
        cells.pop();
    }
    cells
}

/// All of `now`, then clears for what `before` showed past its end.
fn whole_cells(before: &[StatValue], now: &[StatValue]) -> Vec<StatCell> {
    let mut cells = set_all(now);
    cells.extend(changed_cells(before, now).into_iter().skip(now.len()));
    cells
}

/// The host's statistics tables: what every client shows, and the delta to broadcast.
///
/// Rows are keyed by `(table, id)` and keep the order they were first set in; heads by
/// `(table, row)`. [`StatTable::delta`] returns what changed since the previous delta:
///
/// * a new row: all its cells;
/// * a changed row: only the changed cells, unchanged ones as [`StatCell::Keep`], with
///   trailing `Keep`s cut. A cell past a row's end counts as an empty one: cells past a
///   shortened row's end are cleared (`""`), and growing a row by empty cells is no change;
/// * a row moved to another tbody: all its cells (and clears past its end), with the new tbody;
/// * a removed row that had been broadcast: `cells: None` with its last broadcast tbody;
/// * a new or changed head: all its cells (and clears past its end);
/// * `full` is `None`, and nothing changed gives `None`.
///
/// [`StatTable::full`] is for a client that just joined: every head and row as of the
/// last delta (`full: Some(true)`), i.e. what every other client shows. Changes made
/// since then are not in it; they reach the new client with the next delta, like
/// everyone else. (A full update of the current state would let a row added and removed
/// between two deltas, never broadcast, stay forever on the new client.)
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatTable {
    heads: Vec<HeadState>,
    rows: Vec<RowState>,
}

impl StatTable {
    /// Empty tables.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets a head row of a table.
    pub fn set_head(&mut self, table: u8, row: u8, cells: Vec<StatValue>) {
        match self.heads.iter_mut().find(|h| h.table == table && h.row == row) {
            Some(head) => head.cells = cells,
            None => self.heads.push(HeadState { table, row, cells, sent: None }),
        }
    }

    /// Sets a body row, adding it if it is new.
    pub fn set_row(&mut self, table: u8, id: u32, tbody: u8, cells: Vec<StatValue>) {
        match self.rows.iter_mut().find(|r| r.table == table && r.id == id) {
            Some(row) => {
                row.tbody = tbody;
                row.cells = Some(cells);
            }
            None => self.rows.push(RowState { table, id, tbody, cells: Some(cells), sent: None }),
        }
    }

    /// Sets one cell of an existing row, padding the row with empty cells if it is shorter.
    /// Returns `false` (and does nothing) if the row does not exist.
    pub fn set_cell(&mut self, table: u8, id: u32, column: usize, value: StatValue) -> bool {
        let Some(cells) = self.rows.iter_mut().find(|r| r.table == table && r.id == id).and_then(|r| r.cells.as_mut())
        else {
            return false;
        };
        if cells.len() <= column {
            cells.resize(column + 1, StatValue::empty());
        }
        cells[column] = value;
        true
    }

    /// Removes a body row. Returns `false` if there was no such row.
    pub fn remove_row(&mut self, table: u8, id: u32) -> bool {
        let Some(index) = self.rows.iter().position(|r| r.table == table && r.id == id && r.cells.is_some()) else {
            return false;
        };
        if self.rows[index].sent.is_some() {
            self.rows[index].cells = None;
        } else {
            self.rows.remove(index);
        }
        true
    }

    /// A row's current cells.
    pub fn row(&self, table: u8, id: u32) -> Option<&[StatValue]> {
        self.rows.iter().find(|r| r.table == table && r.id == id).and_then(|r| r.cells.as_deref())
    }

    /// Everything changed since the previous delta (see the type's docs), now counted as broadcast.
    pub fn delta(&mut self) -> Option<StatUpdate> {
        let mut bodies = Vec::new();
        for row in &mut self.rows {
            let cells = match (&row.cells, &row.sent) {
                (None, Some((tbody, _))) => {
                    bodies.push(StatRow { id: row.id, table: row.table, cells: None, tbody: *tbody });
                    continue;
                }
                (None, None) => continue,
                (Some(cells), Some((tbody, sent))) if *tbody == row.tbody => {
                    let delta = changed_cells(sent, cells);
                    if delta.is_empty() {
                        continue;
                    }
                    row.sent = Some((row.tbody, cells.clone()));
                    delta
                }
                (Some(cells), sent) => {
                    let whole = whole_cells(sent.as_ref().map_or(&[][..], |(_, c)| c), cells);
                    row.sent = Some((row.tbody, cells.clone()));
                    whole
                }
            };
            bodies.push(StatRow { id: row.id, table: row.table, cells: Some(cells), tbody: row.tbody });
        }
        self.rows.retain(|r| r.cells.is_some());
        let mut heads = Vec::new();
        for head in &mut self.heads {
            let sent = head.sent.as_deref();
            if sent.is_some_and(|sent| changed_cells(sent, &head.cells).is_empty()) {
                continue;
            }
            heads.push(StatHead {
                table: head.table,
                cells: whole_cells(sent.unwrap_or(&[]), &head.cells),
                row: head.row,
            });
            head.sent = Some(head.cells.clone());
        }
        if bodies.is_empty() && heads.is_empty() { None } else { Some(StatUpdate { bodies, heads, full: None }) }
    }

    /// Every head and row as of the last [`StatTable::delta`], `full: Some(true)`, for a client that just joined.
    pub fn full(&self) -> StatUpdate {
        StatUpdate {
            bodies: self
                .rows
                .iter()
                .filter_map(|r| {
                    let (tbody, cells) = r.sent.as_ref()?;
                    Some(StatRow { id: r.id, table: r.table, cells: Some(set_all(cells)), tbody: *tbody })
                })
                .collect(),
            heads: self
                .heads
                .iter()
                .filter_map(|h| Some(StatHead { table: h.table, cells: set_all(h.sent.as_deref()?), row: h.row }))
                .collect(),
            full: Some(true),
        }
    }
}

/// A client's view of the stat tables: the cells shown, after every [`StatUpdate`] so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatView {
    /// `(table, row id)` → `(tbody, cells)`.
    pub rows: BTreeMap<(u8, u32), (u8, Vec<StatValue>)>,
    /// `(table, head row)` → cells.
    pub heads: BTreeMap<(u8, u8), Vec<StatValue>>,
}

fn apply_cells(shown: &mut Vec<StatValue>, cells: &[StatCell]) {
    for (i, cell) in cells.iter().enumerate() {
        if let StatCell::Set(v) = cell {
            if shown.len() <= i {
                shown.resize(i + 1, StatValue::empty());
            }
            shown[i] = v.clone();
        }
    }
}

impl StatView {
    /// Applies an update: a full one replaces everything; `null` cells keep what is shown.
    pub fn apply(&mut self, update: &StatUpdate) {
        if update.full == Some(true) {
            *self = Self::default();
        }
        for row in &update.bodies {
            match &row.cells {
                None => {
                    self.rows.remove(&(row.table, row.id));
                }
                Some(cells) => {
                    let entry = self.rows.entry((row.table, row.id)).or_insert((row.tbody, Vec::new()));
                    entry.0 = row.tbody;
                    apply_cells(&mut entry.1, cells);
                }
            }
        }
        for head in &update.heads {
            apply_cells(self.heads.entry((head.table, head.row)).or_default(), &head.cells);
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::meta::PLAYER_COLUMNS;
    use crate::meta::testing::{both_ways, enc, s, shape_err};

    fn set(v: impl Into<StatValue>) -> StatCell {
        StatCell::Set(v.into())
    }

    #[test]
    fn stat_update_forms() {
        both_ways(
            StatUpdate {
                bodies: vec![
                    StatRow {
                        id: 7,
                        table: 0,
                        cells: Some(vec![set("bob"), set(""), set(12), set(3), set(45)]),
                        tbody: 1,
                    },
                    StatRow { id: 8, table: 0, cells: None, tbody: 1 },
                ],
                heads: vec![StatHead {
                    table: 0,
                    cells: vec![set("Name"), set("Status"), set("Score"), set("Deaths"), set("Ping")],
                    row: 0,
                }],
                full: None,
            },
            r#"[[[7,0,["bob","",12,3,45],1],[8,0,null,1]],[[0,["Name","Status","Score","Deaths","Ping"],0]]]"#,
        );
        // Unchanged, cleared and set cells; the full flag.
        both_ways(
            StatUpdate {
                bodies: vec![StatRow {
                    id: 4_294_967_295,
                    table: 2,
                    cells: Some(vec![
                        StatCell::Keep,
                        StatCell::clear(),
                        set(-13),
                        set(Number::from_f64(1.5).expect("finite")),
                    ]),
                    tbody: 255,
                }],
                heads: vec![],
                full: Some(true),
            },
            r#"[[[4294967295,2,[null,"",-13,1.5],255]],[],true]"#,
        );
        both_ways(StatUpdate { full: Some(false), ..StatUpdate::default() }, "[[],[],false]");
        assert_eq!(StatCell::clear(), set(""));
        assert!(StatValue::empty().is_empty());
        assert!(!StatValue::from(0).is_empty());
    }

    #[test]
    fn stat_errors() {
        for json in ["[]", "[[]]", "[[],[],true,1]", "[[],[],\"yes\"]", "[[],{}]", "{}", "null", "[null,[]]"] {
            shape_err(STAT_DATA, json, "stat update");
        }
        for json in [
            "[[[1,0,[]]],[]]",
            "[[[1,0,[],0,0]],[]]",
            "[[[-1,0,[],0]],[]]",
            "[[[4294967296,0,[],0]],[]]",
            "[[[1,256,[],0]],[]]",
            "[[[1,0,[],1.5]],[]]",
            "[[[\"1\",0,[],0]],[]]",
            "[[[1,0,\"x\",0]],[]]",
            "[[{}],[]]",
        ] {
            shape_err(STAT_DATA, json, "stat row");
        }
        for json in ["[[],[[0,[],0,0]]]", "[[],[[0,null,0]]]", "[[],[[0,[],300]]]"] {
            shape_err(STAT_DATA, json, "stat head");
        }
        for json in ["[[[1,0,[true],0]],[]]", "[[[1,0,[[1]],0]],[]]", "[[],[[0,[{}],0]]]"] {
            shape_err(STAT_DATA, json, "stat cell");
        }
    }

    #[test]
    fn player_stat_cells() {
        let p = PlayerStat { name: s("bob"), status: s("dead"), score: -2, deaths: 3, latency_ms: 45 };
        assert_eq!(p.cells(), vec![StatValue::from("bob"), "dead".into(), (-2).into(), 3.into(), 45.into()]);
        assert_eq!(PLAYER_COLUMNS, ["name", "status", "score", "deaths", "latency"]);
    }

    fn heads() -> Vec<StatValue> {
        ["Name", "Status", "Score", "Deaths", "Ping"].into_iter().map(StatValue::from).collect()
    }

    fn bob() -> Vec<StatValue> {
        PlayerStat { name: s("bob"), latency_ms: 40, ..PlayerStat::default() }.cells()
    }

    fn alice() -> Vec<StatValue> {
        PlayerStat { name: s("alice"), latency_ms: 55, ..PlayerStat::default() }.cells()
    }

    #[test]
    fn stat_table_sends_deltas() {
        let mut t = StatTable::new();
        let json = |u: Option<StatUpdate>| u.map(enc);
        assert_eq!(t.delta(), None, "empty tables send nothing");

        t.set_head(0, 0, heads());
        t.set_row(0, 7, 1, bob());
        t.set_row(0, 9, 1, alice());
        assert_eq!(
            json(t.delta()).as_deref(),
            Some(
                r#"[[[7,0,["bob","",0,0,40],1],[9,0,["alice","",0,0,55],1]],[[0,["Name","Status","Score","Deaths","Ping"],0]]]"#
            ),
            "first delta: everything",
        );
        assert_eq!(t.delta(), None, "nothing changed");

        // Setting the same values again is no change.
        t.set_head(0, 0, heads());
        t.set_row(0, 7, 1, bob());
        assert_eq!(t.delta(), None);

        // Only the changed cells, trailing unchanged ones cut.
        assert!(t.set_cell(0, 7, 2, 1.into()));
        assert!(t.set_cell(0, 7, 4, 42.into()));
        assert!(t.set_cell(0, 9, 1, "dead".into()));
        assert_eq!(json(t.delta()).as_deref(), Some(r#"[[[7,0,[null,null,1,null,42],1],[9,0,[null,"dead"],1]],[]]"#));

        // A removed row goes as null, once.
        assert!(t.remove_row(0, 7));
        assert!(!t.remove_row(0, 7), "already removed");
        assert_eq!(t.row(0, 7), None);
        assert!(!t.set_cell(0, 7, 0, "x".into()), "no such row");
        assert_eq!(json(t.delta()).as_deref(), Some(r#"[[[7,0,null,1]],[]]"#));
        assert_eq!(t.delta(), None);

        // A shortened row clears the cells past its end (the empty ones stay as they are).
        t.set_row(0, 9, 1, vec!["alice".into()]);
        assert_eq!(json(t.delta()).as_deref(), Some(r#"[[[9,0,[null,"","","",""],1]],[]]"#));
        t.set_row(0, 9, 1, vec!["alice".into(), StatValue::empty()]);
        assert_eq!(t.delta(), None, "an empty cell where there was none is no change");

        // A row moved to another tbody is sent whole.
        t.set_row(0, 9, 2, vec!["alice".into(), StatValue::empty()]);
        assert_eq!(json(t.delta()).as_deref(), Some(r#"[[[9,0,["alice",""],2]],[]]"#));

        // A row added and removed between two deltas is never sent.
        t.set_row(1, 7, 0, bob());
        assert!(t.remove_row(1, 7));
        assert_eq!(t.delta(), None);

        // A changed head is sent whole, clearing past its end; set_cell pads with empty cells.
        t.set_head(0, 0, vec!["Nick".into()]);
        assert!(t.set_cell(0, 9, 3, 1.into()));
        assert_eq!(t.row(0, 9), Some(&["alice".into(), StatValue::empty(), StatValue::empty(), 1.into()][..]));
        assert_eq!(json(t.delta()).as_deref(), Some(r#"[[[9,0,[null,null,null,1],2]],[[0,["Nick","","","",""],0]]]"#));
    }

    #[test]
    fn stat_table_full_is_what_was_broadcast() {
        let mut t = StatTable::new();
        t.set_head(0, 0, heads());
        t.set_row(0, 7, 1, bob());
        assert_eq!(enc(t.full()), "[[],[],true]", "nothing broadcast yet");
        t.set_row(0, 9, 1, alice());
        let _ = t.delta();
        assert!(t.remove_row(0, 7));
        assert!(t.set_cell(0, 9, 2, 5.into()));
        t.set_row(1, 3, 0, vec!["spec".into()]);
        // Changes since the last delta are not in full() yet: the new client gets them with
        // everyone else in the next delta.
        assert_eq!(
            enc(t.full()),
            r#"[[[7,0,["bob","",0,0,40],1],[9,0,["alice","",0,0,55],1]],[[0,["Name","Status","Score","Deaths","Ping"],0]],true]"#
        );
        assert_eq!(json_delta(&mut t), r#"[[[7,0,null,1],[9,0,[null,null,5],1],[3,1,["spec"],0]],[]]"#);
        assert_eq!(
            enc(t.full()),
            r#"[[[9,0,["alice","",5,0,55],1],[3,1,["spec"],0]],[[0,["Name","Status","Score","Deaths","Ping"],0]],true]"#
        );
    }

    fn json_delta(t: &mut StatTable) -> String {
        enc(t.delta().expect("a change"))
    }

    impl StatView {
        /// Trailing empty cells look like no cells.
        fn normalized(mut self) -> Self {
            for cells in self.rows.values_mut().map(|(_, c)| c).chain(self.heads.values_mut()) {
                while cells.last().is_some_and(StatValue::is_empty) {
                    cells.pop();
                }
            }
            self
        }
    }

    #[derive(Clone, Debug)]
    enum StatOp {
        SetRow(u8, u32, u8, Vec<StatValue>),
        SetCell(u8, u32, usize, StatValue),
        Remove(u8, u32),
        SetHead(u8, u8, Vec<StatValue>),
        Delta,
        Join,
    }

    fn arb_stat_op() -> impl Strategy<Value = StatOp> {
        let value =
            prop_oneof![Just(StatValue::empty()), Just(StatValue::from("a")), (0u32..3).prop_map(StatValue::from)];
        let cells = proptest::collection::vec(value.clone(), 0..4);
        prop_oneof![
            (0u8..2, 0u32..4, 0u8..2, cells.clone()).prop_map(|(t, id, b, c)| StatOp::SetRow(t, id, b, c)),
            (0u8..2, 0u32..4, 0usize..5, value).prop_map(|(t, id, col, v)| StatOp::SetCell(t, id, col, v)),
            (0u8..2, 0u32..4).prop_map(|(t, id)| StatOp::Remove(t, id)),
            (0u8..2, 0u8..2, cells).prop_map(|(t, r, c)| StatOp::SetHead(t, r, c)),
            Just(StatOp::Delta),
            Just(StatOp::Join),
        ]
    }

    proptest! {
        #[test]
        fn stat_clients_see_what_the_host_has(ops in proptest::collection::vec(arb_stat_op(), 0..40)) {
            let mut table = StatTable::new();
            let mut clients = vec![StatView::default()];
            for op in ops {
                match op {
                    StatOp::SetRow(t, id, b, c) => table.set_row(t, id, b, c),
                    StatOp::SetCell(t, id, col, v) => {
                        let _ = table.set_cell(t, id, col, v);
                    }
                    StatOp::Remove(t, id) => {
                        let _ = table.remove_row(t, id);
                    }
                    StatOp::SetHead(t, r, c) => table.set_head(t, r, c),
                    StatOp::Delta => {
                        if let Some(update) = table.delta() {
                            prop_assert_eq!(update.full, None);
                            clients.iter_mut().for_each(|c| c.apply(&update));
                        }
                    }
                    StatOp::Join => {
                        let mut view = StatView::default();
                        view.apply(&table.full());
                        clients.push(view);
                    }
                }
            }
            if let Some(update) = table.delta() {
                clients.iter_mut().for_each(|c| c.apply(&update));
            }
            prop_assert_eq!(table.delta(), None);
            let mut truth = StatView::default();
            truth.apply(&table.full());
            let truth = truth.normalized();
            for client in clients {
                prop_assert_eq!(&client.normalized(), &truth);
            }
        }
    }
}
