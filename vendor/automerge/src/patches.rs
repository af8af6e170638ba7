mod patch;
mod patch_builder;
mod patch_log;
pub use patch::{Patch, PatchAction};
pub(crate) use patch_builder::PatchBuilder;
pub(crate) use patch_log::Event;
pub use patch_log::PatchLog;
