mod element_id;
mod key;
mod object_id;
mod opid;
