//! `sqlx::migrate!` embeds the migration files at compile time; without this, adding a
//! migration alone would not rebuild the crate and the binary would run the old schema.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
