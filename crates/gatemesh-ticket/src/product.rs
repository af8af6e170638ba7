//! What kind of ticket it is: an organizer's product (`GA`, `VIP`, `3DAY`, `FRI`).
//!
//! A JWT names the product by its code (claim `prod`, a string); GM1, which has room for a
//! byte, by its number (1-255) in the event's product table (the lists file says which
//! number is which code). A JWT may carry a number too (`"prod": 3`). A ticket without a
//! product is the event's default product.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

use crate::InvalidField;

/// An organizer's short code for a product: 1-16 characters of `A-Z a-z 0-9 _ -`, not all
/// digits (so a code never reads as a product number).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ProductCode(String);

impl ProductCode {
    /// Longest code, in characters.
    pub const MAX_LEN: usize = 16;

    /// `s` as a product code, when it keeps the rule.
    pub fn new(s: impl Into<String>) -> Result<Self, InvalidField> {
        let s = s.into();
        let ok = (1..=Self::MAX_LEN).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
            && !s.bytes().all(|b| b.is_ascii_digit());
        if ok {
            Ok(Self(s))
        } else {
            Err(InvalidField::Product(s))
        }
    }

    /// The code as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ProductCode {
    type Error = InvalidField;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl From<ProductCode> for String {
    fn from(c: ProductCode) -> Self {
        c.0
    }
}

impl FromStr for ProductCode {
    type Err = InvalidField;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl fmt::Display for ProductCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A product's number in its event's product table, 1-255: what a GM1 ticket carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "u64", into = "u8")]
pub struct ProductNumber(u8);

impl ProductNumber {
    /// `n` as a product number, when it is 1-255.
    pub fn new(n: u64) -> Result<Self, InvalidField> {
        match u8::try_from(n) {
            Ok(b) if b > 0 => Ok(Self(b)),
            _ => Err(InvalidField::ProductNumber(n)),
        }
    }

    /// The number.
    pub fn get(self) -> u8 {
        self.0
    }
}

impl TryFrom<u64> for ProductNumber {
    type Error = InvalidField;
    fn try_from(n: u64) -> Result<Self, Self::Error> {
        Self::new(n)
    }
}

impl From<ProductNumber> for u8 {
    fn from(n: ProductNumber) -> Self {
        n.0
    }
}

impl fmt::Display for ProductNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The product as a ticket carries it: its code (JWT) or its number (GM1, or a JWT).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Product {
    /// The organizer's code, `"prod": "VIP"`.
    Code(ProductCode),
    /// The number in the event's product table, `"prod": 2`.
    Number(ProductNumber),
}

impl Product {
    /// Reads a code, or a number when `s` is all digits: what `--product` and a CSV column
    /// take.
    pub fn parse(s: &str) -> Result<Self, InvalidField> {
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            let n = s
                .parse::<u64>()
                .map_err(|_| InvalidField::Product(s.to_owned()))?;
            Ok(Self::Number(ProductNumber::new(n)?))
        } else {
            Ok(Self::Code(ProductCode::new(s)?))
        }
    }
}

impl FromStr for Product {
    type Err = InvalidField;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for Product {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Code(c) => c.fmt(f),
            Self::Number(n) => write!(f, "#{n}"),
        }
    }
}

impl Serialize for Product {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Code(c) => s.serialize_str(c.as_str()),
            Self::Number(n) => s.serialize_u8(n.get()),
        }
    }
}

impl<'de> Deserialize<'de> for Product {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Product;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a product code (1-16 of A-Z a-z 0-9 _ -) or a number 1-255")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Product, E> {
                ProductCode::new(s).map(Product::Code).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Product, E> {
                ProductNumber::new(n)
                    .map(Product::Number)
                    .map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Product, E> {
                let n = u64::try_from(n).map_err(|_| E::custom("a product number is 1-255"))?;
                self.visit_u64(n)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_numbers_keep_their_rules() {
        for ok in ["GA", "VIP", "3DAY", "FRI", "day_2", "A-B"] {
            assert!(ProductCode::new(ok).is_ok(), "{ok}");
        }
        for bad in ["", "12", "V I P", "VIP!", "ÄA", "ABCDEFGHIJKLMNOPQ"] {
            assert!(ProductCode::new(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            Product::parse("7").unwrap(),
            Product::Number(ProductNumber(7))
        );
        assert!(Product::parse("0").is_err());
        assert!(Product::parse("256").is_err());
        assert!(Product::parse("99999999999999999999999").is_err());
        let p: Product = serde_json::from_str("\"VIP\"").unwrap();
        assert_eq!(p.to_string(), "VIP");
        let p: Product = serde_json::from_str("3").unwrap();
        assert_eq!(serde_json::to_string(&p).unwrap(), "3");
        for bad in ["0", "-1", "300", "\"12\"", "\"\"", "1.5", "null", "[]"] {
            assert!(serde_json::from_str::<Product>(bad).is_err(), "{bad}");
        }
    }
}
