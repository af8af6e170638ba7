use std::{net::SocketAddr, path::PathBuf, process::ExitCode};

use anyhow::{Context, Result, bail};

/// Run the central server: events, ticket issuing, voids, manifests, redemptions.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Data directory: the database, the server's issuer key, the admin token.
    #[arg(long)]
    data: PathBuf,
    /// Database: `sqlite://PATH` (default: server.sqlite in the data directory).
    #[arg(long)]
    db: Option<String>,
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Admin token for organizer calls (also from GATEMESH_ADMIN_TOKEN); when neither is
    /// given, one is generated on first run, printed once and kept in the data directory.
    #[arg(long, env = "GATEMESH_ADMIN_TOKEN", hide_env_values = true)]
    admin_token: Option<String>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.db.as_deref() {
        None => {}
        Some(db) if db.starts_with("postgres://") || db.starts_with("postgresql://") => {
            bail!("PostgreSQL storage is not built yet; use the default SQLite file (omit --db)")
        }
        Some(db)
            if db
                .strip_prefix("sqlite://")
                .is_some_and(|p| std::path::Path::new(p) == args.data.join("server.sqlite")) => {}
        Some(db) => {
            bail!("--db {db:?}: only the default sqlite://DATA/server.sqlite is supported so far")
        }
    }
    let opened = gatemesh_server::Server::open_sqlite(&args.data, args.admin_token)?;
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
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("listening on {}", args.listen))?;
        let addr = listener.local_addr()?;
        println!("{}", serde_json::json!({ "api": addr.to_string() }));
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        gatemesh_server::api::serve(listener, opened.server, shutdown).await?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
