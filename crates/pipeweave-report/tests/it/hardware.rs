//! docs/cost-model.md shows the GPU and network tables exactly as the code holds them.

#[test]
fn docs_show_the_tables_the_code_holds() {
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cost-model.md"),
    )
    .expect("docs/cost-model.md");
    let tables = pipeweave_report::hardware_markdown();
    assert!(
        docs.contains(&tables),
        "docs/cost-model.md must hold the tables as rendered:\n{tables}"
    );
}
