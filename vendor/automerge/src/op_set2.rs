pub(crate) mod change;
pub(crate) mod columns;
pub(crate) mod meta;
pub(crate) mod op;
pub(crate) mod op_set;
pub(crate) mod parents;
pub(crate) mod types;

pub use parents::{Parent, Parents};

pub(crate) use op::{ChangeOp, Op, OpBuilder, SuccInsert, TxOp};
pub(crate) use types::{ActorIdx, KeyRef, MarkData, OpType, PropRef};
pub use types::{ChangeMetadata, ScalarValue, ValueRef};

pub(crate) use meta::ValueMeta;
pub(crate) use op_set::{OpQuery, OpQueryTerm, OpSet, ReadOpError, TopOps};
