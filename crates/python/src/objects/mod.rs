//! The objects of a file as Python sees them: `File` and `Group` (group), `Dataset` and its
//! views (dataset). One room, as each hands out the other (a group's members are datasets, a
//! dataset's parent is a group).

pub mod dataset;
pub mod group;
