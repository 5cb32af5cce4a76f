//! Releases of `datafusion-anonymize` on an Apache DataFusion Ballista cluster.
//!
//! A query over a release runs on the client (planning, and the release itself: the one
//! aggregate over the source on the cluster, then the search, the draws and the budget
//! charge locally), then travels to the scheduler as a plan whose released tables are
//! shipped as their released histograms ([`codec`]), and is read on the executors, which
//! expand each histogram into the client's rows. `datafusion_anonymize::distributed`
//! describes the three places; this package adds what needs Ballista:
//!
//! * [`codec`]: the logical and physical plan codecs that carry shipped tables;
//! * [`connect`]: a client session on a cluster;
//! * [`scheduler_config`] and [`executor_config`]: the state the `dfanon-scheduler` and
//!   `dfanon-executor` binaries run with;
//! * [`start_standalone`]: an in-process cluster for tests and trials.

mod cluster;
pub mod codec;

pub use cluster::*;
pub use codec::{AnonymizeLogicalCodec, AnonymizePhysicalCodec};
