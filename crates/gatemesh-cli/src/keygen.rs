use std::{
    fs::OpenOptions,
    io::Write,
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{Context, Result};
use gatemesh_ticket::{IssuerKey, KeyId};

/// Create an issuer key pair: DIR/issuer.key.pem (PKCS#8, private) and DIR/issuer.pub.pem
/// (SPKI, for gates).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to write the key files into (created if missing).
    #[arg(long)]
    out: PathBuf,
    /// Key id; by default derived from the public key (RFC 7638 thumbprint, 16 characters).
    #[arg(long)]
    kid: Option<KeyId>,
}

/// Creates a file that must not exist yet; keys are never silently overwritten.
fn create_new(path: &Path, mode: u32, text: &str) -> Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| {
            format!(
                "creating {} (an existing key is never overwritten)",
                path.display()
            )
        })?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    Ok(())
}

pub fn run(args: Args) -> Result<ExitCode> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let key = IssuerKey::generate(args.kid);
    let private = args.out.join("issuer.key.pem");
    let public = args.out.join("issuer.pub.pem");
    if private.exists() || public.exists() {
        anyhow::bail!(
            "{} already holds an issuer key; choose another --out",
            args.out.display()
        );
    }
    create_new(&private, 0o600, &key.to_pem()?)?;
    create_new(&public, 0o644, &key.public().to_pem())?;
    println!("kid:     {}", key.kid());
    println!(
        "private: {}  (keep it secret: it signs tickets)",
        private.display()
    );
    println!("public:  {}  (give it to every gate)", public.display());
    Ok(ExitCode::SUCCESS)
}
