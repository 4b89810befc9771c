//! The `sep-2640-*` scenarios (Skills extension): the client behaves as a host that lists the
//! server's skills, and — except in `sep-2640-client-no-prefetch`, where nothing asks for a
//! skill — loads the first one when "the model asks for it": `SKILL.md` verified against the
//! listing (size, digest, frontmatter) before anything of it is used, and the skill's other
//! files read only after that. A skill that fails verification is refused and reported, which
//! is the expected outcome of the `verify-*` scenarios.

use mcp_core::RequestOptions;
use mcp_session::ClientSession;
use mcp_skills::{offers_skills, SkillResources, SkillsExt};

/// Runs the host flow of `scenario` on an open session.
pub async fn drive(scenario: &str, session: &ClientSession) -> Result<(), String> {
    if !offers_skills(&session.server_info().capabilities) {
        return Err(
            "the server does not offer the io.modelcontextprotocol/skills extension".into(),
        );
    }
    let skills = session
        .list_all_skills(RequestOptions::new())
        .await
        .map_err(|e| format!("skills/list: {e}"))?;
    for entry in &skills {
        println!(
            "skill {}: {}",
            entry.name().unwrap_or("?"),
            entry.description().unwrap_or("")
        );
    }
    if scenario == "sep-2640-client-no-prefetch" {
        // Listing is not loading: no file is fetched ahead of need.
        return Ok(());
    }
    let Some(entry) = skills.first() else {
        return Err("the server lists no skills".into());
    };
    let loaded = match session.load_skill(entry, RequestOptions::new()).await {
        Ok(loaded) => loaded,
        Err(e) => {
            // Refusing the skill is the host's whole job here.
            println!("refused: {e}");
            return Ok(());
        }
    };
    println!(
        "loaded {} ({} bytes of instructions)",
        entry.uri,
        loaded.body.len()
    );
    if let SkillResources::Listed(files) = &entry.resources {
        for file in files.iter().filter(|f| f.uri != entry.uri) {
            let text = session
                .read_skill_file(entry, &file.uri, RequestOptions::new())
                .await
                .map_err(|e| format!("reading {}: {e}", file.uri))?;
            println!("read {} ({} bytes, verified)", file.uri, text.len());
        }
    }
    Ok(())
}
