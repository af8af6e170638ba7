//! `gatemesh server` as a service manager runs it: settings from a TOML file (flags and
//! environment over it, unknown keys refused), logs as JSON lines, liveness and readiness on
//! plain paths; and the systemd units under packaging/systemd, checked by systemd itself.

use std::{
    io::{BufRead, BufReader, Read},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
};

use serde_json::Value;

const FILE_TOKEN: &str = "file-admin-token-0123456789";
const ENV_TOKEN: &str = "env-admin-token-0123456789";

fn gatemesh() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gatemesh"))
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Starts `cmd` and reads its ready line; standard error stays piped for the log.
fn start(mut cmd: Command) -> (Child, Value) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ready = serde_json::from_str(&line).unwrap_or_else(|_| {
        let _ = child.kill();
        let mut err = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut err);
        panic!("the server did not start: {line:?} {err}")
    });
    (child, ready)
}

/// Stops the server and returns what it logged.
fn stop(mut child: Child) -> String {
    child.kill().unwrap();
    child.wait().unwrap();
    let mut log = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    log
}

async fn status(base: &str, path: &str, token: &str) -> u16 {
    gatemesh_testkit::api_client(token, std::time::Duration::from_secs(10))
        .get(format!("{base}{path}"))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_takes_a_config_file_that_flags_and_environment_override() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("server.toml");
    std::fs::write(
        &config,
        format!(
            "data = {:?}\nlisten = \"127.0.0.1:1\"\nplain-http = true\nadmin-token = \"{FILE_TOKEN}\"\nlog-format = \"json\"\n",
            p(&dir.path().join("data"))
        ),
    )
    .unwrap();

    // The file's data directory, plain HTTP, token and log format; the flag's address.
    let mut cmd = gatemesh();
    cmd.args(["server", "--config", p(&config), "--listen", "127.0.0.1:0"])
        .env_remove("GATEMESH_ADMIN_TOKEN");
    let (child, ready) = start(cmd);
    let base = ready["url"].as_str().unwrap().to_owned();
    assert!(base.starts_with("http://127.0.0.1:"), "{ready}");
    assert_ne!(ready["api"], "127.0.0.1:1");
    assert!(dir.path().join("data/issuer.jwks.json").exists());
    assert_eq!(status(&base, "/v1/events", FILE_TOKEN).await, 200);
    assert_eq!(
        status(&base, "/v1/events", "wrong-token-0123456789").await,
        401
    );
    assert_eq!(status(&base, "/healthz", "").await, 200);
    assert_eq!(status(&base, "/readyz", "").await, 200);
    let log = stop(child);
    let first: Value = serde_json::from_str(log.lines().next().unwrap_or_default())
        .unwrap_or_else(|_| panic!("not a JSON log line: {log}"));
    assert_eq!(first["level"], "INFO", "{first}");
    assert_eq!(first["fields"]["message"], "serving", "{first}");
    assert_eq!(first["fields"]["url"], base.as_str(), "{first}");

    // The environment's token over the file's; --log-format over the file's.
    let mut cmd = gatemesh();
    cmd.args(["server", "--config", p(&config), "--listen", "127.0.0.1:0"])
        .args(["--log-format", "text"])
        .env("GATEMESH_ADMIN_TOKEN", ENV_TOKEN);
    let (child, ready) = start(cmd);
    let base = ready["url"].as_str().unwrap().to_owned();
    assert_eq!(status(&base, "/v1/events", ENV_TOKEN).await, 200);
    assert_eq!(status(&base, "/v1/events", FILE_TOKEN).await, 401);
    let log = stop(child);
    assert!(
        log.contains("INFO") && !log.trim_start().starts_with('{'),
        "{log}"
    );
}

/// SIGTERM (what systemd and `kill` send) stops the server as Ctrl-C does: it stops taking
/// requests, finishes, and exits 0. Without a handler the signal ended it at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_server_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = gatemesh();
    cmd.args(["server", "--data", p(&dir.path().join("data"))])
        .args(["--listen", "127.0.0.1:0", "--plain-http"])
        .env("GATEMESH_ADMIN_TOKEN", ENV_TOKEN);
    let (mut child, ready) = start(cmd);
    let base = ready["url"].as_str().unwrap().to_owned();
    assert_eq!(status(&base, "/healthz", "").await, 200);
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let started = std::time::Instant::now();
    let exited = loop {
        if let Some(exited) = child.try_wait().unwrap() {
            break exited;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "still running"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(exited.code(), Some(0), "{exited:?}");
}

#[test]
fn a_config_file_with_an_unknown_or_wrong_key_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("server.toml");
    for (text, says) in [
        (
            "data = \"DATA\"\nlistn = \"127.0.0.1:1\"\n",
            "unknown field `listn`",
        ),
        ("data = \"DATA\"\nlisten = 8080\n", "listen"),
        ("data = \"DATA\"\nlog-format = \"xml\"\n", "xml"),
        ("db = \"sqlite://DATA/s.sqlite\"\n", "no data directory"),
        ("data = \"DATA\" listen", "server.toml"),
    ] {
        let data = dir.path().join("data");
        std::fs::write(&config, text.replace("DATA", p(&data))).unwrap();
        let out = gatemesh()
            .args(["server", "--config", p(&config), "--plain-http"])
            .args(["--listen", "127.0.0.1:0"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {stderr}");
        assert!(stderr.contains(says), "{text}: {stderr}");
        assert!(!data.exists(), "{text}: nothing is made");
    }
}

/// Both units as systemd reads them, each pointed at the binary under test (verify insists
/// that the command exists). The unit files must exist: the test cannot pass by skipping
/// them; only systemd-analyze's absence skips, with the reason printed.
#[test]
fn the_systemd_units_pass_systemd_analyze_verify() {
    let units = repo_root().join("packaging/systemd");
    let names = ["gatemesh-server.service", "gatemesh-gate.service"];
    let dir = tempfile::tempdir().unwrap();
    for name in names {
        let text = std::fs::read_to_string(units.join(name)).unwrap();
        assert!(text.contains("ExecStart=/usr/bin/gatemesh "), "{name}");
        for hardening in [
            "NoNewPrivileges=yes",
            "ProtectSystem=strict",
            "ProtectHome=yes",
            "PrivateTmp=yes",
            "DynamicUser=yes",
            "StateDirectory=",
        ] {
            assert!(text.contains(hardening), "{name} lacks {hardening}");
        }
        let text = text.replace(
            "/usr/bin/gatemesh ",
            &format!("{} ", env!("CARGO_BIN_EXE_gatemesh")),
        );
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let Ok(version) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("SKIPPED: systemd-analyze is not installed (apt-get install systemd)");
        return;
    };
    assert!(version.status.success());
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .args(names.map(|n| dir.path().join(n)))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "systemd-analyze verify: {stderr}");
    // verify exits 0 on some warnings; the units must give none about themselves.
    for name in names {
        assert!(!stderr.contains(name), "{stderr}");
    }
}
