//! Registrations that share one store of releases (`RegisterOptions::releases`), as a
//! server's sessions do: the same request is one release and one charge whoever makes it,
//! each user's quota (`RegisterOptions::principal`) counts what their requests added, and
//! the table's budget counts everyone's.

use datafusion::arrow::array::{Float64Array, UInt64Array};
use datafusion::arrow::compute::concat_batches;
use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::{
    owner_session, public_session, register_with, run_script, Principal, RegisterOptions,
    SharedReleases,
};

const SETUP: &str = "
CREATE TABLE t(age INT, sex VARCHAR, disease VARCHAR) AS VALUES (30, 'M', 'A'), (40, 'F', 'B'), (50, 'M', 'A'), (30, 'F', 'A'), (40, 'M', 'C'), (50, 'F', 'B'), (30, 'M', 'B'), (40, 'F', 'A');
CREATE TABLE h_age(v VARCHAR, l1 VARCHAR, l2 VARCHAR) AS VALUES ('30', '[30-50)', '*'), ('40', '[30-50)', '*'), ('50', '[50-70)', '*');
CREATE TABLE h_sex(v VARCHAR, l1 VARCHAR) AS VALUES ('M', '*'), ('F', '*');
CREATE TABLE h_disease(v VARCHAR, l1 VARCHAR) AS VALUES ('A', '*'), ('B', '*'), ('C', '*');
";

fn release(epsilon: f64, levels: &str) -> String {
    format!(
        "SELECT * FROM anonymize('t', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', informative => 'disease:h_disease', epsilon => {epsilon}, levels => '{levels}')"
    )
}

struct Site {
    owner: SessionContext,
    releases: SharedReleases,
}

impl Site {
    async fn new() -> Result<Self> {
        let releases = SharedReleases::new();
        let owner = SessionContext::new();
        register_with(
            &owner,
            RegisterOptions {
                releases: Some(releases.clone()),
                ..RegisterOptions::owner()
            },
        )?;
        run_script(&owner, SETUP).await?;
        Ok(Self { owner, releases })
    }

    fn user(&self, name: &str, quota: Option<f64>) -> Result<SessionContext> {
        let policy = crate::common::h_policy(&["t"]);
        public_session(
            &self.owner,
            RegisterOptions {
                releases: Some(self.releases.clone()),
                principal: quota.map(|q| Principal {
                    name: name.into(),
                    epsilon_quota: q,
                }),
                ..RegisterOptions::public(policy, 3.0)
            },
        )
    }

    /// (releases, epsilon spent) of `t` as the owner's `privacy_budget()` shows it.
    async fn spent(&self) -> Result<(u64, f64)> {
        let batches = self
            .owner
            .sql("SELECT releases, epsilon_spent FROM privacy_budget() WHERE table_name = 'datafusion.public.t'")
            .await?
            .collect()
            .await?;
        let Some(first) = batches.first() else {
            return Ok((0, 0.0));
        };
        let all = concat_batches(&first.schema(), &batches)?;
        if all.num_rows() == 0 {
            return Ok((0, 0.0));
        }
        let releases = all
            .column(0)
            .as_any()
            .downcast_ref::<UInt64Array>()
            .map(|a| a.value(0));
        let epsilon = all
            .column(1)
            .as_any()
            .downcast_ref::<Float64Array>()
            .map(|a| a.value(0));
        Ok((releases.unwrap_or(0), epsilon.unwrap_or(f64::NAN)))
    }
}

async fn rows(ctx: &SessionContext, sql: &str) -> std::result::Result<String, String> {
    let run = async {
        let batches = ctx.sql(sql).await?.collect().await?;
        datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .map(|t| t.to_string())
            .map_err(Into::into)
    };
    run.await
        .map_err(|e: datafusion::error::DataFusionError| e.strip_backtrace())
}

#[tokio::test]
async fn one_request_from_two_users_is_one_release_and_one_charge_and_the_owners_is_its_own(
) -> Result<()> {
    let site = Site::new().await?;
    let alice = site.user("alice", None)?;
    let bob = site.user("bob", None)?;
    let sql = release(1.0, "age=1, sex=1");
    let by_alice = rows(&alice, &sql).await;
    assert!(by_alice.is_ok(), "{by_alice:?}");
    assert_eq!(rows(&bob, &sql).await, by_alice);
    assert_eq!(site.spent().await?, (1, 1.0));
    // The owner's draw of the same arguments is not a public one (it fails on records a
    // public draw leaves out): drawn and charged apart, then served from the store.
    let by_owner = rows(&site.owner, &sql).await;
    assert!(by_owner.is_ok(), "{by_owner:?}");
    assert_eq!(site.spent().await?, (2, 2.0));
    assert_eq!(rows(&site.owner, &sql).await, by_owner);
    assert_eq!(rows(&alice, &sql).await, by_alice);
    assert_eq!(site.spent().await?, (2, 2.0));
    Ok(())
}

#[tokio::test]
async fn a_users_quota_counts_what_their_requests_added() -> Result<()> {
    let site = Site::new().await?;
    let alice = site.user("alice", Some(1.5))?;
    let bob = site.user("bob", Some(1.0))?;
    assert!(rows(&alice, &release(1.0, "age=1, sex=1")).await.is_ok());
    // A second release of epsilon 1 would take alice to 2 > 1.5.
    assert_eq!(
        rows(&alice, &release(1.0, "age=2, sex=1")).await,
        Err("Error during planning: privacy quota exceeded for user 'alice' on table 'datafusion.public.t': this release costs epsilon = 1; the user's releases of it have spent epsilon = 1 of their quota of 1.5. Nothing was released".to_string())
    );
    assert_eq!(site.spent().await?, (1, 1.0));
    // bob is served alice's release without a charge to his quota, then makes his own.
    assert!(rows(&bob, &release(1.0, "age=1, sex=1")).await.is_ok());
    assert!(rows(&bob, &release(1.0, "age=2, sex=1")).await.is_ok());
    assert_eq!(site.spent().await?, (2, 2.0));
    // The table's budget (3) is for everyone: a release of 1.5 no longer fits.
    let carol = site.user("carol", None)?;
    let over = rows(&carol, &release(1.5, "age=0, sex=1")).await;
    assert!(
        over.as_ref()
            .is_err_and(|e| e.contains("privacy budget exceeded for table 'datafusion.public.t'")),
        "{over:?}"
    );
    // A refused request charged nobody: alice's quota still has 0.5.
    let quota = "SELECT table_name, releases, epsilon_spent, epsilon_quota, epsilon_remaining, privacy_unit FROM privacy_quota()";
    let table = |releases: u64, spent: &str, quota: &str, remaining: &str| {
        format!(
            "+---------------------+----------+---------------+---------------+-------------------+--------------+\n\
             | table_name          | releases | epsilon_spent | epsilon_quota | epsilon_remaining | privacy_unit |\n\
             +---------------------+----------+---------------+---------------+-------------------+--------------+\n\
             | datafusion.public.t | {releases:<8} | {spent:<13} | {quota:<13} | {remaining:<17} | row          |\n\
             +---------------------+----------+---------------+---------------+-------------------+--------------+"
        )
    };
    assert_eq!(rows(&alice, quota).await, Ok(table(1, "1.0", "1.5", "0.5")));
    assert!(rows(&alice, &release(0.5, "age=0, sex=1")).await.is_ok());
    assert_eq!(site.spent().await?, (3, 2.5));
    // Each user sees their own quota only; a user without one sees no rows.
    assert_eq!(rows(&alice, quota).await, Ok(table(2, "1.5", "1.5", "0.0")));
    assert_eq!(rows(&bob, quota).await, Ok(table(1, "1.0", "1.0", "0.0")));
    assert_eq!(
        rows(&carol, "SELECT COUNT(*) AS n FROM privacy_quota()").await,
        Ok("+---+\n| n |\n+---+\n| 0 |\n+---+".to_string())
    );
    Ok(())
}

/// A public session made from the owner's shares the owner's store and ledger unless it
/// is given its own: publications and charges are then one account per table for all.
#[tokio::test]
async fn a_public_session_shares_the_owners_store_unless_given_its_own() -> Result<()> {
    let site = Site::new().await?;
    let policy = crate::common::h_policy(&["t"]);
    let inherited = public_session(&site.owner, RegisterOptions::public(policy.clone(), 3.0))?;
    let alone = public_session(
        &site.owner,
        RegisterOptions {
            releases: Some(SharedReleases::new()),
            ..RegisterOptions::public(policy, 3.0)
        },
    )?;
    let shared = site.user("alice", None)?;
    let sql = release(1.0, "age=1, sex=1");
    assert!(rows(&inherited, &sql).await.is_ok());
    assert!(rows(&shared, &sql).await.is_ok());
    assert!(rows(&alone, &sql).await.is_ok());
    // The inherited and the shared session made one release and one charge; the session
    // with its own store charged its own ledger.
    assert_eq!(site.spent().await?, (1, 1.0));
    let own = rows(&alone, "SELECT releases FROM privacy_budget()").await;
    assert!(own.as_ref().is_ok_and(|t| t.contains("| 1 ")), "{own:?}");
    Ok(())
}

#[tokio::test]
async fn owner_sessions_share_tables_and_releases_and_keep_their_own_settings() -> Result<()> {
    let site = Site::new().await?;
    let second = owner_session(
        &site.owner,
        RegisterOptions {
            releases: Some(site.releases.clone()),
            ..RegisterOptions::owner()
        },
    )?;
    // A table made in either session is seen by the other.
    second
        .sql("CREATE TABLE made_by_second AS SELECT 7 AS x")
        .await?
        .collect()
        .await?;
    assert!(rows(&site.owner, "SELECT x FROM made_by_second")
        .await
        .is_ok_and(|t| t.contains("| 7 |")));
    // A setting changed in one leaves the other as it was.
    let set = rows(&second, "SET datafusion.execution.batch_size = 17").await;
    assert!(set.is_ok(), "{set:?}");
    assert_eq!(second.state().config().batch_size(), 17);
    assert_eq!(site.owner.state().config().batch_size(), 8192);
    // The same request in both owner sessions is one release and one charge.
    let sql = release(1.0, "age=1, sex=1");
    let first = rows(&site.owner, &sql).await;
    assert!(first.is_ok(), "{first:?}");
    assert_eq!(rows(&second, &sql).await, first);
    assert_eq!(site.spent().await?, (1, 1.0));
    Ok(())
}

#[tokio::test]
async fn a_release_whose_client_went_away_is_charged_to_nobody() -> Result<()> {
    let site = Site::new().await?;
    // The method's first progress report says the draw is under way, then waits until the
    // test lets it go on (by then the query is gone, and the method stops).
    let (started, wait_started) = std::sync::mpsc::channel::<()>();
    let (go_on, wait_go_on) = std::sync::mpsc::channel::<()>();
    let wait_go_on = std::sync::Mutex::new(wait_go_on);
    let started = std::sync::Mutex::new(started);
    let progress: datafusion_anonymize::ProgressFn = std::sync::Arc::new(move |_, _, _| {
        if let Ok(started) = started.lock() {
            let _ = started.send(());
        }
        if let Ok(wait) = wait_go_on.lock() {
            let _ = wait.recv_timeout(std::time::Duration::from_secs(10));
        }
    });
    let policy = crate::common::h_policy(&["t"]);
    let alice = public_session(
        &site.owner,
        RegisterOptions {
            releases: Some(site.releases.clone()),
            principal: Some(Principal {
                name: "alice".into(),
                epsilon_quota: 1.0,
            }),
            progress: Some(progress),
            ..RegisterOptions::public(policy, 3.0)
        },
    )?;
    let sql = release(1.0, "age=1, sex=1");
    let query = {
        let alice = alice.clone();
        let sql = sql.clone();
        tokio::spawn(async move { rows(&alice, &sql).await })
    };
    let waited = tokio::task::spawn_blocking(move || {
        wait_started.recv_timeout(std::time::Duration::from_secs(30))
    })
    .await;
    assert!(matches!(waited, Ok(Ok(()))), "the draw never started");
    // Charged while the draw runs.
    assert_eq!(site.spent().await?, (1, 1.0));
    query.abort();
    assert!(query.await.is_err_and(|e| e.is_cancelled()));
    // The query is gone (its work stops as the runtime drops it): both charges are taken
    // back, the table's and alice's quota.
    let mut spent = site.spent().await?;
    for _ in 0..500 {
        if spent == (0, 0.0) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        spent = site.spent().await?;
    }
    assert_eq!(spent, (0, 0.0));
    drop(go_on);
    // alice's whole quota is still hers: the same release now is made and charged once.
    let again = rows(&alice, &sql).await;
    assert!(again.is_ok(), "{again:?}");
    assert_eq!(site.spent().await?, (1, 1.0));
    Ok(())
}

/// `RegisterOptions::on_release` hears each call that is served a release: the call that
/// drew it with what it charged, later calls as reads that charged nothing, a seeded trial
/// as seeded; a refused release is no event.
#[tokio::test]
async fn each_served_release_is_told_with_its_charge() -> Result<()> {
    use datafusion_anonymize::ReleaseEvent;
    use std::sync::{Arc, Mutex};
    let site = Site::new().await?;
    let heard: Arc<Mutex<Vec<(String, ReleaseEvent)>>> = Arc::default();
    let listener = |who: &'static str| {
        let heard = heard.clone();
        Some(Arc::new(move |event: &ReleaseEvent| {
            heard.lock().unwrap().push((who.to_string(), event.clone()))
        }) as datafusion_anonymize::ReleaseEventFn)
    };
    let user = |name: &'static str, quota: f64| {
        public_session(
            &site.owner,
            RegisterOptions {
                releases: Some(site.releases.clone()),
                principal: Some(Principal {
                    name: name.into(),
                    epsilon_quota: quota,
                }),
                on_release: listener(name),
                ..RegisterOptions::public(crate::common::h_policy(&["t"]), 3.0)
            },
        )
    };
    let (alice, bob) = (user("alice", 1.5)?, user("bob", 1.5)?);
    let sql = release(1.0, "age=1, sex=1");
    assert!(rows(&alice, &sql).await.is_ok());
    assert!(rows(&bob, &sql).await.is_ok());
    // Past alice's quota: refused, nothing drawn, nothing told.
    assert!(rows(&alice, &release(1.0, "age=2, sex=1")).await.is_err());
    let event = |drawn: bool, epsilon: f64, quota_left: f64| ReleaseEvent {
        account: "datafusion.public.t".into(),
        method: "dp_histogram".into(),
        drawn,
        epsilon,
        delta: 0.0,
        seeded: false,
        quota_left: Some(quota_left),
    };
    assert_eq!(
        heard.lock().unwrap().clone(),
        vec![
            ("alice".to_string(), event(true, 1.0, 0.5)),
            ("bob".to_string(), event(false, 0.0, 1.5)),
        ]
    );
    Ok(())
}
