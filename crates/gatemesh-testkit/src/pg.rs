//! A fresh PostgreSQL database per test, on the cluster the test command started
//! (`scripts/pg.sh start`; its URL in `GATEMESH_TEST_PG`), and the two storage backends a
//! server test runs on (see [`on_both_backends!`](crate::on_both_backends)).

use std::sync::atomic::{AtomicU32, Ordering};

/// The URL of the test cluster's maintenance database. Panics with directions when the tests
/// were started without one: the PostgreSQL half of the suite must not pass by skipping.
pub fn cluster_url() -> String {
    std::env::var("GATEMESH_TEST_PG").unwrap_or_else(|_| {
        panic!(
            "GATEMESH_TEST_PG is not set: run the tests with scripts/test.sh, or start a \
             cluster with `export GATEMESH_TEST_PG=$(scripts/pg.sh start)`"
        )
    })
}

/// Where a server under test keeps its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The server's own SQLite file in its data directory.
    Sqlite,
    /// A fresh database on the test cluster.
    Postgres,
}

impl Backend {
    /// The database to give the server: `None` on SQLite (it makes its own file).
    pub fn database(self) -> Option<Database> {
        match self {
            Backend::Sqlite => None,
            Backend::Postgres => Some(Database::fresh()),
        }
    }
}

/// Runs each named test once per backend, as `name::sqlite` and `name::postgres`: each
/// `async fn name(backend: Backend)` on a multi-threaded runtime with four workers.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                super::$name($crate::pg::Backend::Sqlite).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() {
                super::$name($crate::pg::Backend::Postgres).await;
            }
        }
    )*};
}

/// A database that exists for as long as this value; dropped with `DROP DATABASE … FORCE`.
#[derive(Debug)]
pub struct Database {
    pub url: String,
    name: String,
    admin: String,
}

impl Database {
    pub fn fresh() -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let admin = cluster_url();
        let name = format!(
            "gm_test_{}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0)
        );
        run(&admin, &format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("creating database {name} at {admin}: {e}"));
        let base = admin.rsplit_once('/').map_or(admin.as_str(), |(b, _)| b);
        Self {
            url: format!("{base}/{name}"),
            name,
            admin,
        }
    }
}

impl Database {
    /// Runs SQL on this database (one or more statements), as its owner.
    pub fn execute(&self, sql: &str) -> Result<(), String> {
        run(&self.url, sql)
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let _ = run(
            &self.admin,
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

/// Runs one statement on a plain thread (the synchronous client cannot run on an async one,
/// and tests call this from both).
fn run(url: &str, sql: &str) -> Result<(), String> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let mut client =
                    postgres::Client::connect(url, postgres::NoTls).map_err(|e| e.to_string())?;
                client.batch_execute(sql).map_err(|e| e.to_string())
            })
            .join()
            .unwrap_or_else(|_| Err("the database thread panicked".into()))
    })
}

/// A PostgreSQL cluster of one test's own (not the shared test cluster), so the test may stop
/// and start it: made with `scripts/pg.sh` in a fresh directory on a free loopback port,
/// stopped and removed on drop.
#[derive(Debug)]
pub struct Cluster {
    dir: std::path::PathBuf,
    port: u16,
    /// The maintenance database's URL.
    pub url: String,
}

impl Cluster {
    pub fn start() -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        // Under /var/tmp: as root the cluster runs as `postgres`, which must reach it.
        let dir = std::path::PathBuf::from(format!(
            "/var/tmp/gm-test-pg-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let mut c = Self {
            dir,
            port,
            url: String::new(),
        };
        c.url = c.pg_sh("start");
        c
    }

    /// Stops the cluster (fast shutdown: connections are ended).
    pub fn stop(&self) {
        self.pg_sh("stop");
    }

    /// Starts it again after [`Cluster::stop`].
    pub fn restart(&self) {
        self.pg_sh("start");
    }

    fn pg_sh(&self, what: &str) -> String {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg.sh");
        let out = std::process::Command::new(script)
            .arg(what)
            .env("GATEMESH_PG_DIR", &self.dir)
            .env("GATEMESH_PG_PORT", self.port.to_string())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "scripts/pg.sh {what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
