//! Running on a cluster: what runs where, and how our tables travel.
//!
//! A query over a release, sent to an Apache DataFusion Ballista cluster, runs in three
//! places:
//!
//! * **the client** parses and plans the SQL (our table functions run there), then, before
//!   the plan leaves ([`ClusterPlanner`]), computes every table only it can produce. For a
//!   release that is phase 1 — the one aggregate over the source, itself a plain DataFusion
//!   plan that runs on the cluster — then phases 2 and 3 (the lattice search, the random
//!   draws, the budget charge) on the client, which holds the ledger and the one secure
//!   random generator. Small hierarchy tables are read on the client
//!   ([`local_state`]);
//! * **the scheduler** receives the plan with each such table as a [`ShippedTable`]:
//!   a release travels as its released histogram (classes × values × counts), never as
//!   rows (the logical codec);
//! * **the executors** receive [`ShippedExec`] scans (the physical codec) and
//!   expand the histogram into rows batch by batch, in canonical order, as the query reads
//!   them. Expanding is deterministic: the rows are the client's rows, nothing is drawn
//!   again anywhere, and the budget is charged once, on the client.
//!
//! This module holds what needs no cluster: the planner and the bytes a shipped table
//! travels as ([`wire`]). The plan codecs that carry those bytes in Ballista's protobuf
//! plans, the client connection and the scheduler and executor set-up are the
//! `dfanon-ballista` package's (`ballista/` in this repository), so that an application
//! that embeds this crate compiles no cluster.

mod planner;
pub mod wire;

pub use crate::session::{local_state, PlansOnCluster};
pub use crate::tables::shipped::{Shipped, ShippedExec, ShippedTable};
pub use planner::ClusterPlanner;
