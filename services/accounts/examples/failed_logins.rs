//! The memory of a standalone accounts process under a flood of wrong passwords: its
//! resident set before, at its peak and once it has settled.
//!
//! ```text
//! BASRA_SERVER__LISTEN=127.0.0.1:50061 BASRA_SERVER__TRUSTED_PROXIES='["127.0.0.1/32"]' \
//!     target/…/accounts &
//! cargo run -p accounts --example failed_logins -- http://127.0.0.1:50061 <pid> [logins] [concurrency]
//! ```
//!
//! It sends `logins` (default 1,000) Login calls with wrong passwords, `concurrency`
//! (default 32) at a time, each for a username nobody has (the server checks the password
//! against a dummy hash then, exactly as hard as for a real account) and each from its own
//! address: the process must trust 127.0.0.1 as a proxy (`server.trusted_proxies`), and
//! every call names a different client in `x-forwarded-for`, so the per-address and
//! per-account sign-in limits never stop the flood. It samples the process's `VmRSS`
//! every 20 ms, and reads it again `settle` seconds (default 10) after the last answer.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use basra_proto::basra::accounts::v1::LoginRequest;
use basra_proto::basra::accounts::v1::accounts_service_client::AccountsServiceClient;
use tokio::task::JoinSet;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .context("the server's URL, e.g. http://127.0.0.1:50061")?;
    let pid: u32 = args.next().context("the server's pid")?.parse()?;
    let logins: u32 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1_000);
    let concurrency: u32 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(32);
    let settle: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(10);
    let channel = tonic::transport::Endpoint::from_shared(url)?
        .connect()
        .await
        .context("cannot reach the server")?;
    let client = AccountsServiceClient::new(channel);

    let before = rss_kib(pid)?;
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(before));
    let sampler = tokio::spawn({
        let peak = peak.clone();
        async move {
            loop {
                if let Ok(now) = rss_kib(pid) {
                    peak.fetch_max(now, std::sync::atomic::Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    });
    let started = Instant::now();
    let mut answers: BTreeMap<String, u32> = BTreeMap::new();
    let mut calls = JoinSet::new();
    for i in 0..logins {
        if calls.len() >= concurrency as usize
            && let Some(code) = calls.join_next().await
        {
            *answers.entry(code?).or_default() += 1;
        }
        let mut client = client.clone();
        calls.spawn(async move {
            let mut request = tonic::Request::new(LoginRequest {
                username: format!("nobody{i}"),
                password: "not the password".into(),
            });
            // A client address of its own for each call: 10.0.x.y.
            let from = format!("10.0.{}.{}", i / 250, i % 250 + 1);
            request
                .metadata_mut()
                .insert("x-forwarded-for", from.parse().expect("an address"));
            match client.login(request).await {
                Ok(_) => "OK".to_owned(),
                Err(status) => format!("{:?}", status.code()),
            }
        });
    }
    while let Some(code) = calls.join_next().await {
        *answers.entry(code?).or_default() += 1;
    }
    let took = started.elapsed();
    let at_end = rss_kib(pid)?;
    tokio::time::sleep(Duration::from_secs(settle)).await;
    sampler.abort();
    let settled = rss_kib(pid)?;
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "{logins} wrong logins, {concurrency} at a time, in {:.1} s: {answers:?}",
        took.as_secs_f64()
    );
    println!(
        "RSS: {} MiB before, {} MiB at the peak, {} MiB at the last answer, {} MiB {settle} s later",
        before / 1024,
        peak / 1024,
        at_end / 1024,
        settled / 1024
    );
    Ok(())
}

/// The resident set of `pid`, in KiB (`VmRSS` of `/proc/<pid>/status`).
fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("no process {pid}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS")
}
