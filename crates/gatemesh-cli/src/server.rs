use std::{net::SocketAddr, path::PathBuf, process::ExitCode};

use anyhow::{Context, Result};

/// Run the central server: events, ticket issuing, voids, manifests, redemptions.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Data directory: the database, the server's issuer key, the admin token.
    #[arg(long)]
    data: PathBuf,
    /// Database: `sqlite://PATH` (default: server.sqlite in the data directory) or
    /// `postgres://USER@HOST:PORT/DB`. Servers sharing a PostgreSQL database act as one
    /// service when they also share the data directory (issuer key, admin token).
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
    let db = args
        .db
        .as_deref()
        .map(gatemesh_server::Database::parse)
        .transpose()?;
    let opened = gatemesh_server::Server::open(&args.data, db, args.admin_token)?;
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
