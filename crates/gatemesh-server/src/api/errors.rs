//! How the API fails: every error is a JSON [`ErrorBody`] with a stable `code`; client input
//! gets a 4xx, never a 5xx; a failed database is 503.

use axum::{
    Json,
    extract::{FromRequest, Request, rejection::JsonRejection},
    http::StatusCode,
    response::{IntoResponse, Response},
};
pub(crate) use gatemesh_wire::ErrorBody;
use serde::de::DeserializeOwned;

use crate::{Server, store::StoreError};

/// An error on its way to the client.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

pub(crate) fn err(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError {
        status,
        code,
        message: message.into(),
    }
}

pub(crate) fn bad(message: impl Into<String>) -> ApiError {
    err(StatusCode::BAD_REQUEST, "bad_request", message)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(ErrorBody::new(self.code, self.message))).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match &e {
            StoreError::Exists(_) | StoreError::Conflict(_) => {
                err(StatusCode::CONFLICT, "conflict", e.to_string())
            }
            StoreError::NotFound(_) => err(StatusCode::NOT_FOUND, "not_found", e.to_string()),
            StoreError::Forbidden(_) => err(StatusCode::FORBIDDEN, "forbidden", e.to_string()),
            StoreError::Signing(_) => {
                tracing::error!("{e}");
                err(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "the server could not sign a record",
                )
            }
            StoreError::Sqlite(_)
            | StoreError::Postgres(_)
            | StoreError::Pool(_)
            | StoreError::Unreachable { .. }
            | StoreError::Corrupt(_) => {
                tracing::error!("storage: {e}");
                err(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "the database failed",
                )
            }
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        let status = match r.status() {
            StatusCode::UNPROCESSABLE_ENTITY => StatusCode::BAD_REQUEST,
            s => s,
        };
        err(
            status,
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                "too_large"
            } else {
                "bad_request"
            },
            r.body_text(),
        )
    }
}

/// `Json` whose rejections are our JSON errors.
pub(crate) struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let Json(v) = Json::<T>::from_request(req, state).await?;
        Ok(Self(v))
    }
}

/// Runs storage work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    server: &Server,
    f: impl FnOnce(&dyn crate::store::Storage) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, ApiError> {
    let store = server.store.clone();
    tokio::task::spawn_blocking(move || f(store.as_ref()))
        .await
        .map_err(|e| err(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?
        .map_err(ApiError::from)
}
