use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{Context, Result};
use gatemesh_mesh::fs::{PRIVATE, PUBLIC};
use gatemesh_ticket::{IssuerKey, KeyId};

/// Create an issuer key pair: DIR/issuer.key.pem (PKCS#8, private), and for gates and JOSE
/// libraries DIR/issuer.pub.pem (plain SPKI PEM) and DIR/issuer.jwks.json (a JWK Set that
/// names the key id).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to write the key files into (created if missing).
    #[arg(long)]
    out: PathBuf,
    /// Key id; by default derived from the public key (RFC 7638 thumbprint, 16 characters).
    #[arg(long)]
    kid: Option<KeyId>,
    /// Say what was written as one JSON object (kid, private, public, jwks), for scripts.
    #[arg(long)]
    json: bool,
}

/// Creates a file that must not exist yet; keys are never silently overwritten.
fn create_new(path: &Path, mode: u32, text: &str) -> Result<()> {
    gatemesh_mesh::fs::create_new(path, mode, text).with_context(|| {
        format!(
            "creating {} (an existing key is never overwritten)",
            path.display()
        )
    })
}

pub fn run(args: Args) -> Result<ExitCode> {
    let private = args.out.join("issuer.key.pem");
    let public = args.out.join("issuer.pub.pem");
    let jwks = args.out.join("issuer.jwks.json");
    if private.exists() || public.exists() || jwks.exists() {
        crate::exit::bail_usage!(
            "{} already holds an issuer key; choose another --out",
            args.out.display()
        );
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let key = IssuerKey::generate(args.kid);
    create_new(&private, PRIVATE, &key.to_pem()?)?;
    let set = gatemesh_ticket::jwks([&key.public()]);
    create_new(&public, PUBLIC, &key.public().to_spki_pem())?;
    create_new(&jwks, PUBLIC, &format!("{set:#}\n"))?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "kid": key.kid().to_string(),
                "private": private,
                "public": public,
                "jwks": jwks,
                "pem_names_kid": key.public().kid_is_derived(),
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("kid:     {}", key.kid());
    println!(
        "private: {}  (keep it secret: it signs tickets)",
        private.display()
    );
    if key.public().kid_is_derived() {
        println!("public:  {}  (give it to every gate)", public.display());
        println!("jwks:    {}  (the same key, with its id)", jwks.display());
    } else {
        // A plain PEM cannot name a chosen id; read alone it gets the derived one.
        println!("public:  {}  (give it to every gate)", jwks.display());
        println!(
            "pem:     {}  (the same key for PEM readers; it does not carry the id {})",
            public.display(),
            key.kid()
        );
    }
    Ok(ExitCode::SUCCESS)
}
