//! The lists file on the command line: `gatemesh gate --lists`, and `gatemesh issue --lists`,
//! which maps product codes to the numbers GM1 tickets carry.

use std::path::Path;

use anyhow::{Context, Result};
use gatemesh_ticket::{Format, Product};
use gatemesh_wire::Lists;

use crate::exit::UsageExt;

/// Reads and checks a lists file; a bad one is a usage error naming what is wrong.
pub fn load(path: &Path) -> Result<Lists> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("reading the lists file {}", path.display()))
        .usage()?;
    Lists::from_json(&bytes)
        .with_context(|| format!("the lists file {}", path.display()))
        .usage()
}

/// A product as `--product` or the seats CSV name it (`VIP`, or a number), as a ticket of
/// `format` carries it: checked against the lists file when there is one, and a code made
/// its number for GM1.
pub fn ticket_product(raw: &str, format: Format, lists: Option<&Lists>) -> Result<Product> {
    let product = Product::parse(raw.trim()).usage()?;
    let Some(lists) = lists else {
        if let (Format::Gm1, Product::Code(code)) = (format, &product) {
            crate::exit::bail_usage!(
                "a GM1 ticket carries its product's number, not the code {code}: give \
                 --lists FILE (its products say which number is {code}), a number, or \
                 --format jwt"
            );
        }
        return Ok(product);
    };
    let Some(def) = lists.product(&product) else {
        crate::exit::bail_usage!("product {product} is not among the lists file's products");
    };
    match format {
        Format::Gm1 => Ok(Product::Number(lists.number_of(&def.code).usage()?)),
        _ => Ok(Product::Code(def.code.clone())),
    }
}
