//! What the browser suites share (`web_client`, `web_events`, `web_inbox`): the built page
//! and playwright-core checked (a suite fails, never skips, without them), `basra dev`
//! (in-memory stores) serving the page beside the API on free ports, an operator's token
//! signed with its development key, and a script of `clients/web/tests` run in node
//! (`tests/run.mjs` compiles it with esbuild), its last line read as the JSON report.
//!
//! Needs Node.js, Debian's `chromium`, the built page and `npm ci` in `clients/web`
//! (`make web`; `make test` does both).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use basra::dev::Started;
use basra::web_page::{WebOptions, is_built};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// `clients/web`.
fn web_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../clients/web")
}

/// `basra dev` serving the web page, for one browser test.
pub(crate) struct WebDev {
    /// Where it listens, and its signing key.
    pub started: Started,
    /// The page's address (`http://…/`).
    pub page: String,
    shutdown: CancellationToken,
    task: JoinHandle<anyhow::Result<()>>,
}

impl WebDev {
    /// Checks that the page is built and playwright-core installed, then starts `basra
    /// dev` with bots that think 30 ms, the services' settings from `env`
    /// (`BASRA_<SERVICE>_…`) and `token_leeway` (`None`: the default).
    pub(crate) async fn start(env: &[(&str, &str)], token_leeway: Option<Duration>) -> WebDev {
        let web = web_dir();
        assert!(
            is_built(&web.join("dist")),
            "the page is not built: run `make web` (npm ci and npm run build in clients/web)"
        );
        assert!(
            web.join("node_modules/playwright-core").exists(),
            "playwright-core is missing: run `npm ci --prefix clients/web`"
        );
        let env = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
        let options = basra::dev::DevOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            database_url: None,
            redis_url: None,
            bot_delay: Some(Duration::from_millis(30)),
            settings: basra::dev_settings::DevSettings::from_env(env).unwrap(),
            web: Some(WebOptions {
                listen: "127.0.0.1:0".parse().unwrap(),
                dir: web.join("dist"),
            }),
            tls: None,
            token_leeway,
        };
        let shutdown = CancellationToken::new();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let task = tokio::spawn({
            let shutdown = shutdown.clone();
            async move {
                basra::dev::run(options, shutdown, move |started| {
                    let _ = tx.send(started);
                })
                .await
            }
        });
        let started = rx.await.expect("basra dev starts");
        let page = format!("http://{}/", started.web_addr.expect("the page is served"));
        WebDev {
            started,
            page,
            shutdown,
            task,
        }
    }

    /// The API's address (`http://…`).
    pub(crate) fn server(&self) -> String {
        format!("http://{}", self.started.addr)
    }

    /// An operator's token for every service of this `basra dev` (15 minutes), naming the
    /// operator `name`.
    pub(crate) fn operator_token(&self, name: &str) -> String {
        let pem = std::fs::read_to_string(&self.started.key_file).unwrap();
        basra::admin::operator_token(
            &pem,
            &self.started.kid,
            "basra-accounts",
            "basra",
            name,
            Duration::from_secs(900),
        )
        .unwrap()
    }

    /// Runs `clients/web/tests/<script>` in node with the page's address, an artifact
    /// directory `$CARGO_TARGET_TMPDIR/<artifacts>` (printed) and `args`, and answers the
    /// JSON report it prints last; the test fails with the report when the run failed.
    pub(crate) async fn run(
        &self,
        script: &str,
        artifacts: &str,
        args: &[&str],
    ) -> serde_json::Value {
        let web = web_dir();
        let artifacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(artifacts);
        println!("screenshots: {}", artifacts.display());
        let mut command = Command::new("node");
        command
            .arg(web.join("tests/run.mjs"))
            .arg(web.join("tests").join(script))
            .arg(&self.page)
            .arg(&artifacts)
            .args(args);
        let output = tokio::task::spawn_blocking(move || {
            command.output().expect("node runs (Debian's nodejs)")
        })
        .await
        .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let line = stdout.lines().last().unwrap_or_default();
        let report: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|err| {
            panic!("one JSON line from the browser ({err}): {stdout}\n{stderr}")
        });
        assert!(
            output.status.success() && report["ok"] == true,
            "the browser run failed: {report:#}\n{stderr}"
        );
        report
    }

    /// Stops `basra dev`; fails the test if it ended with an error.
    pub(crate) async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.unwrap().unwrap();
    }
}
