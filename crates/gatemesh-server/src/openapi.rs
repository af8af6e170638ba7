//! The server's OpenAPI 3 document, generated from the handlers' `#[utoipa::path]`
//! annotations and served at `GET /v1/openapi.json`.
//!
//! The names of enums that live in other crates (ticket formats, verdicts, reasons, staff
//! actions) are mirrored here for the schema only; the tests below pin each mirror to the
//! real enum's serde names.

use utoipa::{
    Modify, OpenApi, ToSchema,
    openapi::{
        ContentBuilder, Ref, ResponseBuilder,
        security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
    },
};

use crate::{api, devices};

/// The document: every endpoint of [`api::router`], its schemas and its security schemes.
#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "gatemesh server",
        description = "The central gatemesh server: events, ticket issuing, voids, transfers, \
            manifests and their live change stream, atomic and idempotent redemptions, device \
            pairing. Every error is JSON: `{\"error\": {\"code\", \"message\"}}`.",
    ),
    paths(
        api::health,
        api::keys,
        api::openapi_json,
        devices::pair,
        api::create_event,
        api::list_events,
        api::issue,
        api::get_ticket,
        api::void,
        api::transfer,
        api::revert,
        api::chain,
        api::audit,
        api::stats,
        devices::create,
        devices::gates,
        api::metrics,
        api::manifest,
        api::changes,
        api::redeem,
        devices::heartbeat,
        api::flags,
        api::resolve,
    ),
    modifiers(&SecuritySchemes, &CommonErrors),
    tags(
        (name = "open", description = "No credential needed."),
        (name = "organizer", description = "The organizer's admin token."),
        (name = "gate", description = "A paired gate's credential, or the admin token."),
    ),
)]
pub struct ApiDoc;

/// The document, with this build's version.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    doc
}

/// Names of the bearer schemes, as the handlers' `security(...)` refer to them.
pub(crate) const ADMIN: &str = "admin";
pub(crate) const DEVICE: &str = "device";

#[derive(Debug)]
struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        let bearer = |description: &str| {
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(description))
                    .build(),
            )
        };
        components.add_security_scheme(
            ADMIN,
            bearer(
                "The organizer's admin token (DATA/admin.token, or the one the server was \
                 started with): every endpoint.",
            ),
        );
        components.add_security_scheme(
            DEVICE,
            bearer(
                "A paired device's credential (`token` from POST /v1/pair, `gmd_…`): the gate \
                 endpoints of its own event only.",
            ),
        );
    }
}

/// Answers every endpoint of a kind can give, added here rather than on each handler: a JSON
/// body can be too large or not JSON; anything behind a credential asks the database.
#[derive(Debug)]
struct CommonErrors;

impl Modify for CommonErrors {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let error = |description: &str| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build()
        };
        for item in doc.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ];
            for op in operations.into_iter().flatten() {
                let responses = &mut op.responses.responses;
                if op.request_body.is_some() {
                    responses
                        .entry("413".into())
                        .or_insert_with(|| error("The body is too large").into());
                    responses
                        .entry("415".into())
                        .or_insert_with(|| error("The body is not JSON").into());
                }
                if op.security.is_some() {
                    responses
                        .entry("503".into())
                        .or_insert_with(|| error("The database failed").into());
                }
            }
        }
    }
}

/// A ticket's wire format.
#[derive(Debug, ToSchema)]
#[schema(as = Format, rename_all = "lowercase")]
#[allow(dead_code)]
pub(crate) enum FormatName {
    Jwt,
    Gm1,
}

/// Green, yellow, red.
#[derive(Debug, ToSchema)]
#[schema(as = Verdict, rename_all = "snake_case")]
#[allow(dead_code)]
pub(crate) enum VerdictName {
    Admit,
    Duplicate,
    Reject,
}

/// Why, for every verdict (the ledger's reason names; the server itself answers `valid`,
/// `already_admitted`, `unknown_ticket`, `void` and `transferred`).
#[derive(Debug, ToSchema)]
#[schema(as = Reason, rename_all = "snake_case")]
#[allow(dead_code)]
pub(crate) enum ReasonName {
    Valid,
    Unlisted,
    Reentry,
    Exit,
    AlreadyAdmitted,
    Unreadable,
    BadSignature,
    UnknownKey,
    WrongEvent,
    Expired,
    NotYetValid,
    Void,
    Transferred,
    UnknownTicket,
    Denied,
    NotInside,
    ExitNotAllowed,
}

/// Staff's decision on a flagged ticket: `accept` (same person), `deny` (refused from now
/// on) or `revert` (its admissions are undone).
#[derive(Debug, ToSchema)]
#[schema(as = Action, rename_all = "snake_case")]
#[allow(dead_code)]
pub(crate) enum ActionName {
    Accept,
    Deny,
    Revert,
}

#[cfg(test)]
mod tests {
    use gatemesh_ledger::{Action, Reason, Verdict};
    use gatemesh_ticket::Format;
    use serde_json::{Value, json};

    use super::*;

    /// The `enum` list of a component schema.
    fn names(schema: &str) -> Vec<String> {
        let doc = serde_json::to_value(document()).unwrap();
        let list = &doc["components"]["schemas"][schema]["enum"];
        list.as_array()
            .unwrap_or_else(|| panic!("{schema} has no enum: {list}"))
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    }

    fn wire<T: serde::Serialize>(v: T) -> String {
        serde_json::to_value(v)
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned()
    }

    // Exhaustive matches: a variant added to one of these enums does not compile here until
    // its mirror has it too.
    #[test]
    fn mirrored_enums_match_the_real_ones() {
        let format = |f: Format| match f {
            Format::Jwt | Format::Gm1 => wire(f),
        };
        assert_eq!(names("Format"), [format(Format::Jwt), format(Format::Gm1)]);
        let verdict = |v: Verdict| match v {
            Verdict::Admit | Verdict::Duplicate | Verdict::Reject => wire(v),
        };
        assert_eq!(
            names("Verdict"),
            [
                verdict(Verdict::Admit),
                verdict(Verdict::Duplicate),
                verdict(Verdict::Reject)
            ]
        );
        let action = |a: Action| match a {
            Action::Accept | Action::Deny | Action::Revert => wire(a),
        };
        assert_eq!(
            names("Action"),
            [
                action(Action::Accept),
                action(Action::Deny),
                action(Action::Revert)
            ]
        );
    }

    // `Reason` is `#[non_exhaustive]`, so no match can prove the list complete from here:
    // every documented name is a real reason, and every reason the server answers with is
    // documented.
    #[test]
    fn documented_reasons_are_real_reasons() {
        let documented = names("Reason");
        for name in &documented {
            let r: Reason = serde_json::from_value(json!(name))
                .unwrap_or_else(|e| panic!("{name} is not a reason: {e}"));
            assert_eq!(&wire(r), name);
        }
        let answered = [
            Reason::Valid,
            Reason::AlreadyAdmitted,
            Reason::UnknownTicket,
            Reason::Void,
            Reason::Transferred,
        ];
        for r in answered {
            assert!(documented.contains(&wire(r)), "{r:?}");
        }
    }

    // Open operations are tagged `open` and need nothing; every other one names only the
    // schemes defined here: `admin` for the organizer's, `admin` or `device` for a gate's.
    #[test]
    fn every_operation_names_its_credentials() {
        let doc: Value = serde_json::to_value(document()).unwrap();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let schemes: Vec<Vec<&str>> = op["security"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| r.as_object().unwrap().keys().map(String::as_str).collect())
                    .collect();
                let expected: &[&[&str]] = match op["tags"][0].as_str().unwrap() {
                    "open" => &[],
                    "organizer" => &[&[ADMIN]],
                    "gate" => &[&[ADMIN], &[DEVICE]],
                    other => panic!("{method} {path}: tag {other}"),
                };
                assert_eq!(schemes, expected, "{method} {path}");
            }
        }
    }

    #[test]
    fn the_document_names_its_version_and_security_schemes() {
        let doc: Value = serde_json::to_value(document()).unwrap();
        assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
        for scheme in [ADMIN, DEVICE] {
            assert_eq!(
                doc["components"]["securitySchemes"][scheme]["scheme"],
                "bearer"
            );
        }
    }
}
