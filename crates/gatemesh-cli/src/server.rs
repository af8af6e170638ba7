use std::{net::SocketAddr, path::PathBuf, process::ExitCode};

use anyhow::{Context, Result};

use crate::exit::{UsageExt, bail_usage};
use crate::log::LogFormat;

/// Run the central server: events, ticket issuing, voids, manifests, redemptions. Serves
/// HTTPS (a self-signed certificate made on first run, or --tls-cert/--tls-key).
///
/// Every setting can also come from a TOML file (--config): its keys are the flags' names
/// (`data`, `db`, `listen`, `public-url`, `tls-cert`, `tls-key`, `plain-http`, `admin-token`,
/// `log-format`); flags and environment variables override it.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A TOML file of settings; flags and environment variables override what it says.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Data directory: the database, the server's issuer key, the admin token.
    #[arg(long, required_unless_present = "config")]
    data: Option<PathBuf>,
    /// Database: `sqlite://PATH` (default: server.sqlite in the data directory) or
    /// `postgres://USER@HOST:PORT/DB`. Servers sharing a PostgreSQL database act as one
    /// service when they also share the data directory (issuer key, admin token).
    #[arg(long)]
    db: Option<String>,
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// The URL devices reach this server at (https://HOST:PORT), for the pairing links it
    /// hands out. Needed with an unspecified --listen address (0.0.0.0, [::]); otherwise the
    /// listen address is used.
    #[arg(long)]
    public_url: Option<String>,
    /// A TLS certificate chain (PEM) from a real CA, instead of the self-signed one the
    /// server makes on first run in DATA/tls/. Devices pin its fingerprint: replacing it
    /// means pairing them again.
    #[arg(long)]
    tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long)]
    tls_key: Option<PathBuf>,
    /// Serve plain HTTP instead of HTTPS: only on a loopback --listen address (tests, a
    /// reverse proxy on the same machine).
    #[arg(long)]
    plain_http: bool,
    /// Admin token for organizer calls (also from GATEMESH_ADMIN_TOKEN); when neither is
    /// given, one is generated on first run, printed once and kept in the data directory.
    #[arg(long, env = "GATEMESH_ADMIN_TOKEN", hide_env_values = true)]
    admin_token: Option<String>,
    /// Log lines on standard error: text for people, json (one object a line) for a log
    /// collector [default: text]. GATEMESH_LOG (or RUST_LOG) chooses what is logged
    /// (default: info).
    #[arg(long, value_enum)]
    log_format: Option<LogFormat>,
}

/// The --config file: the flags' settings under the flags' names; any other key is refused.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct FileConfig {
    data: Option<PathBuf>,
    db: Option<String>,
    listen: Option<SocketAddr>,
    public_url: Option<String>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    plain_http: Option<bool>,
    admin_token: Option<String>,
    log_format: Option<LogFormat>,
}

/// The settings the server runs with: flags (and environment) over the file over defaults.
#[derive(Debug)]
struct Settings {
    data: PathBuf,
    db: Option<String>,
    listen: SocketAddr,
    public_url: Option<String>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    plain_http: bool,
    admin_token: Option<String>,
    log_format: LogFormat,
}

fn settings(args: Args) -> Result<Settings> {
    let file = match &args.config {
        None => FileConfig::default(),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            toml::from_str(&text)
                .with_context(|| format!("{}", path.display()))
                .usage()?
        }
    };
    let s = Settings {
        data: args
            .data
            .or(file.data)
            .context("no data directory: give --data, or `data` in the --config file")
            .usage()?,
        db: args.db.or(file.db),
        listen: args
            .listen
            .or(file.listen)
            .unwrap_or(SocketAddr::from(([127, 0, 0, 1], 8080))),
        public_url: args.public_url.or(file.public_url),
        tls_cert: args.tls_cert.or(file.tls_cert),
        tls_key: args.tls_key.or(file.tls_key),
        plain_http: args.plain_http || file.plain_http.unwrap_or(false),
        admin_token: args.admin_token.or(file.admin_token),
        log_format: args.log_format.or(file.log_format).unwrap_or_default(),
    };
    if s.tls_cert.is_some() != s.tls_key.is_some() {
        bail_usage!("--tls-cert and --tls-key go together");
    }
    if s.plain_http && s.tls_cert.is_some() {
        bail_usage!("--plain-http serves no TLS: drop --tls-cert/--tls-key, or --plain-http");
    }
    Ok(s)
}

pub fn run(args: Args) -> Result<ExitCode> {
    let args = settings(args)?;
    crate::log::init(args.log_format);
    if args.plain_http && !args.listen.ip().is_loopback() {
        bail_usage!(
            "--plain-http serves only a loopback address, not {}: devices send their \
             credentials over this connection",
            args.listen
        );
    }
    if args.listen.ip().is_unspecified() && args.public_url.is_none() {
        bail_usage!(
            "--listen {} names no address devices can reach: add --public-url \
             https://HOST:{} for the pairing links",
            args.listen,
            args.listen.port()
        );
    }
    // Everything the command line says is checked, and the port taken, before anything is
    // written: a refused start leaves the data directory as it was.
    let db = args
        .db
        .as_deref()
        .map(gatemesh_server::Database::parse)
        .transpose()
        .usage()?;
    if let Some(token) = &args.admin_token {
        gatemesh_server::check_admin_token(token).usage()?;
    }
    if let Some(url) = &args.public_url {
        crate::exit::ensure_usage!(
            gatemesh_wire::valid_server_url(url.trim_end_matches('/')),
            "--public-url {url:?} is not https://HOST:PORT (or http://HOST:PORT)"
        );
    }
    let listener = std::net::TcpListener::bind(args.listen)
        .with_context(|| format!("listening on {} (is another server running?)", args.listen))?;
    listener.set_nonblocking(true)?;
    let tls = if args.plain_http {
        None
    } else if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        Some(gatemesh_server::tls::TlsIdentity::from_files(cert, key)?)
    } else {
        std::fs::create_dir_all(&args.data)
            .with_context(|| format!("creating {}", args.data.display()))?;
        Some(gatemesh_server::tls::TlsIdentity::self_signed(&args.data)?)
    };
    let mut opened = gatemesh_server::Server::open(&args.data, db, args.admin_token.clone())?;
    if let Some(url) = &args.public_url {
        opened.server = opened.server.with_public_url(url)?;
    }
    if let Some(token) = &opened.new_admin_token {
        eprintln!(
            "admin token (shown once; kept in {}): {token}",
            args.data.join("admin.token").display()
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let addr = listener.local_addr()?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = args
            .public_url
            .clone()
            .unwrap_or_else(|| format!("{scheme}://{addr}"));
        let fingerprint = tls.as_ref().map(|t| t.fingerprint().to_string());
        // One line on stdout that scripts and tests can wait for.
        println!(
            "{}",
            serde_json::json!({ "api": addr.to_string(), "url": url, "fingerprint": fingerprint })
        );
        tracing::info!(api = %addr, url = %url, "serving");
        let shutdown = crate::stop::asked();
        match &tls {
            Some(tls) => {
                gatemesh_server::api::serve_tls(listener, opened.server, tls, shutdown).await?;
            }
            None => gatemesh_server::api::serve(listener, opened.server, shutdown).await?,
        }
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
