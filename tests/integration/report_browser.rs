//! The report as a person sees it: headless Chromium renders the page of the demo release
//! and its screenshot is not blank.
//!
//! Chromium comes from the distribution: when it is missing and this runs as root with
//! apt-get, the test installs Debian's `chromium` package (as `cargo test --release` on a
//! fresh machine does); where it cannot be installed the test says why and passes without
//! rendering.

use std::path::{Path, PathBuf};
use std::process::Command;

use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use datafusion_anonymize::{register_with, RegisterOptions};

const WIDTH: u32 = 1100;
const HEIGHT: u32 = 2400;

fn installed() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// Chromium, installed from the distribution if need be; `Err` says why there is none.
fn chromium() -> std::result::Result<PathBuf, String> {
    if let Some(path) = installed() {
        return Ok(path);
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root || !Path::new("/usr/bin/apt-get").exists() {
        return Err("chromium is not installed and this is not root with apt-get".into());
    }
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q", "chromium"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    if !install() {
        let _ = Command::new("apt-get").args(["update", "-q"]).status();
        if !install() {
            return Err("apt-get install chromium failed".into());
        }
    }
    installed().ok_or_else(|| "apt-get installed chromium, but it is not in /usr/bin".into())
}

/// Renders `page` into `png`; the size of the PNG file.
fn screenshot(chromium: &Path, page: &Path, png: &Path, profile: &Path) -> u64 {
    let status = Command::new("timeout")
        .arg("120")
        .arg(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={WIDTH},{HEIGHT}"))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        png.exists(),
        "chromium wrote no screenshot: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    std::fs::metadata(png).map(|m| m.len()).unwrap_or(0)
}

/// Width and height from a PNG's header.
fn png_size(png: &Path) -> (u32, u32) {
    let bytes = std::fs::read(png).expect("the screenshot reads");
    assert_eq!(&bytes[1..4], b"PNG", "not a PNG");
    let word =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    (word(16), word(20))
}

#[tokio::test]
async fn chromium_renders_the_demo_report() -> Result<()> {
    let chromium = match chromium() {
        Ok(path) => path,
        Err(why) => {
            println!("skipped: cannot render the report in Chromium: {why}");
            return Ok(());
        }
    };
    let dir = tempfile::tempdir()?;
    let page = dir.path().join("report.html");
    let ctx = SessionContext::new();
    register_with(&ctx, RegisterOptions::owner())?;
    let sql = format!(
        "CREATE TABLE nps AS SELECT * FROM nps_demo(rows => 100000, seed => 1);
         CREATE VIEW age_h AS SELECT * FROM interval_hierarchy('1..100', '10', '0,30,60,100');
         CREATE VIEW sex_h AS SELECT * FROM (VALUES ('M', '*'), ('F', '*')) AS h(value, level_1);
         SELECT * FROM anonymize_report('nps', method => 'ipa', qi => 'age:age_h, sex:sex_h',
             sensitive => 'disease', epsilon => 1.0, suppression_threshold => 2, seed => 1,
             path => '{}');",
        page.display()
    );
    datafusion_anonymize::run_script(&ctx, &sql).await?;
    assert!(page.exists());
    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>")?;

    let shot = dir.path().join("report.png");
    let empty = dir.path().join("blank.png");
    let profile = dir.path().join("profile");
    let report_bytes = screenshot(&chromium, &page, &shot, &profile);
    let blank_bytes = screenshot(&chromium, &blank, &empty, &profile);
    assert_eq!(png_size(&shot), (WIDTH, HEIGHT));
    // A white page compresses to almost nothing; text, tables and charts do not. The
    // demo report's first 2400 pixels measure hundreds of kilobytes, a blank page of the
    // same size a few.
    assert!(
        report_bytes > 20 * blank_bytes && report_bytes > 100_000,
        "the screenshot looks blank: {report_bytes} bytes, a blank page {blank_bytes}"
    );
    Ok(())
}
