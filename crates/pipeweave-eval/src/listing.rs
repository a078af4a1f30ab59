//! Every schedule available by name as plain data: what `list` shows and Python's
//! `list_schedules` returns. The application layer makes it from the resolver's catalog.

use serde::Serialize;

/// Every schedule available by name, in the order names are looked up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScheduleListing {
    /// The library, the user's schedule folders (in search order), the plugins (by name), the
    /// synthesized schedules.
    pub schedules: Vec<ListedSchedule>,
    /// Files of the user's folders that their name does not reach.
    pub unreached: Vec<Unreached>,
    /// How a name is looked up, in words.
    #[serde(skip)]
    pub names_rule: String,
}

/// One schedule available by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListedSchedule {
    /// The name that resolves to it (`plugin:NAME` where a schedule takes the plugin's name).
    pub name: String,
    /// `library`, `folder`, `plugin` or `synthesized`.
    pub source: &'static str,
    /// A folder's file or a plugin's library; `None` for the library.
    pub file: Option<String>,
    /// What it is, in one line.
    pub description: String,
    /// What it requires of P and M, in its own words (empty: nothing).
    pub requires: String,
    /// The schedule or plugin that builds the same plans, when there is one.
    pub same_plans_as: Option<String>,
    /// Its parameters.
    pub params: Vec<ListedParam>,
}

/// One declared parameter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListedParam {
    /// Its name (`v` is `-v`).
    pub name: String,
    /// Its type as a `.weave` file declares it (`bool`, `int 0..3`, `choice(a, b)`).
    #[serde(rename = "type")]
    pub ty: String,
    /// Its default, as written; `None`: it must be given.
    pub default: Option<String>,
    /// What it does.
    pub help: Option<String>,
}

/// A file of the user's schedule folders that its name does not reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unreached {
    /// The name.
    pub name: String,
    /// The file.
    pub path: String,
    /// What the name means instead.
    pub by: String,
}
