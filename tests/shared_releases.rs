//! Registrations that share one store of releases (`RegisterOptions::releases`), as a
//! server's sessions do: the same request is one release and one charge whoever makes it,
//! each user's quota (`RegisterOptions::principal`) counts what their requests added, and
//! the table's budget counts everyone's.

use datafusion::arrow::array::{Float64Array, UInt64Array};
use datafusion::arrow::compute::concat_batches;
use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::{
    public_session, register_with, run_script, Principal, PublicPolicy, RegisterOptions,
    SharedReleases,
};

const SETUP: &str = "
CREATE TABLE t(age INT, sex VARCHAR, disease VARCHAR) AS VALUES (30, 'M', 'A'), (40, 'F', 'B'), (50, 'M', 'A'), (30, 'F', 'A'), (40, 'M', 'C'), (50, 'F', 'B'), (30, 'M', 'B'), (40, 'F', 'A');
CREATE TABLE h_age(v VARCHAR, l1 VARCHAR, l2 VARCHAR) AS VALUES ('30', '[30-50)', '*'), ('40', '[30-50)', '*'), ('50', '[50-70)', '*');
CREATE TABLE h_sex(v VARCHAR, l1 VARCHAR) AS VALUES ('M', '*'), ('F', '*');
";

fn release(epsilon: f64, levels: &str) -> String {
    format!(
        "SELECT * FROM anonymize('t', method => 'dp_histogram', qi => 'age:h_age, sex:h_sex', informative => 'disease', epsilon => {epsilon}, levels => '{levels}')"
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
        let policy = PublicPolicy {
            tables: vec!["h_*".into()],
            ..PublicPolicy::default()
        };
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
async fn one_request_from_two_users_and_the_owner_is_one_release_and_one_charge() -> Result<()> {
    let site = Site::new().await?;
    let alice = site.user("alice", None)?;
    let bob = site.user("bob", None)?;
    let sql = release(1.0, "age=1, sex=1");
    let by_alice = rows(&alice, &sql).await;
    assert!(by_alice.is_ok(), "{by_alice:?}");
    assert_eq!(rows(&bob, &sql).await, by_alice);
    assert_eq!(rows(&site.owner, &sql).await, by_alice);
    assert_eq!(site.spent().await?, (1, 1.0));
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
    assert!(rows(&alice, &release(0.5, "age=0, sex=1")).await.is_ok());
    assert_eq!(site.spent().await?, (3, 2.5));
    Ok(())
}

#[tokio::test]
async fn registrations_with_their_own_stores_charge_separately() -> Result<()> {
    let site = Site::new().await?;
    let policy = PublicPolicy {
        tables: vec!["h_*".into()],
        ..PublicPolicy::default()
    };
    let alone = public_session(&site.owner, RegisterOptions::public(policy, 3.0))?;
    let shared = site.user("alice", None)?;
    let sql = release(1.0, "age=1, sex=1");
    assert!(rows(&alone, &sql).await.is_ok());
    assert!(rows(&shared, &sql).await.is_ok());
    // The session with its own store charged its own ledger; the shared one the owner's.
    assert_eq!(site.spent().await?, (1, 1.0));
    let own = rows(&alone, "SELECT releases FROM privacy_budget()").await;
    assert!(own.as_ref().is_ok_and(|t| t.contains("| 1 ")), "{own:?}");
    Ok(())
}
