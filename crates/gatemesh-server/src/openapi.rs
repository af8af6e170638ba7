//! The server's OpenAPI 3 document, generated from the handlers' `#[utoipa::path]`
//! annotations and served at `GET /v1/openapi.json`.
//!
//! The gate-facing bodies and the shared vocabulary come with their schemas from
//! `gatemesh-wire` (its `openapi` feature). Ticket formats live in `gatemesh-ticket`, which
//! knows nothing of HTTP, so their names are mirrored here for the schema only; a test pins
//! the mirror to the real enum's serde names, and another the document's reasons to the
//! wire's list.

use utoipa::{
    Modify, OpenApi, ToSchema,
    openapi::{
        ContentBuilder, Ref, ResponseBuilder,
        security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
    },
};

use crate::api::{self, devices, events, flags, lists, manifest, redemptions, revoke, tickets};

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
        api::healthz,
        api::readyz,
        api::keys,
        api::jwks,
        api::openapi_json,
        devices::pair,
        events::create,
        events::list,
        tickets::issue,
        tickets::get,
        tickets::list,
        tickets::void,
        tickets::transfer,
        tickets::revert,
        tickets::chain,
        events::audit,
        events::stats,
        devices::create,
        devices::gates,
        revoke::revoke,
        lists::release,
        lists::latest,
        api::metrics,
        manifest::manifest,
        manifest::changes,
        redemptions::redeem,
        redemptions::held,
        devices::heartbeat,
        flags::list,
        flags::resolve,
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

#[cfg(test)]
mod tests {
    use gatemesh_ticket::Format;
    use gatemesh_wire::{Action, Reason, Role, TicketStatus, Verdict};
    use serde_json::Value;

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

    // An exhaustive match: a format added does not compile here until its mirror has it.
    #[test]
    fn the_format_mirror_matches_the_real_enum() {
        let format = |f: Format| match f {
            Format::Jwt | Format::Gm1 => wire(f),
        };
        assert_eq!(names("Format"), [format(Format::Jwt), format(Format::Gm1)]);
    }

    // The vocabulary's schemas are derived from the wire's own enums: the document lists
    // exactly the wire's names.
    #[test]
    fn the_vocabulary_is_the_wires() {
        let reasons: Vec<String> = Reason::ALL.map(wire).to_vec();
        assert_eq!(names("Reason"), reasons);
        let verdicts = [Verdict::Admit, Verdict::Duplicate, Verdict::Reject].map(wire);
        assert_eq!(names("Verdict"), verdicts);
        let actions = [Action::Accept, Action::Deny, Action::Revert].map(wire);
        assert_eq!(names("Action"), actions);
        assert_eq!(
            names("Role"),
            [Role::Gate, Role::Observer, Role::Server].map(wire)
        );
        let statuses = [
            TicketStatus::Active,
            TicketStatus::Void,
            TicketStatus::Transferred,
        ];
        assert_eq!(names("TicketStatus"), statuses.map(wire));
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
