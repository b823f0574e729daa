// Prints, as JSON, the command a host starts for an unpacked bundle: manifest.json's mcp_config
// with ${__dirname}, the system folders and ${user_config.*} replaced by @anthropic-ai/mcpb's own
// getMcpConfigForManifest (the code hosts share), for the person's answers given as JSON.
//
//   node packaging/mcpb/config.mjs UNPACKED_BUNDLE '{"vault_path": "/home/me/notes"}'
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve, sep } from "node:path";
import { getMcpConfigForManifest } from "@anthropic-ai/mcpb";

const [folder, answers = "{}"] = process.argv.slice(2);
if (!folder) {
  console.error("usage: node config.mjs UNPACKED_BUNDLE [USER_CONFIG_JSON]");
  process.exit(2);
}
const extensionPath = resolve(folder);
const manifest = JSON.parse(readFileSync(join(extensionPath, "manifest.json"), "utf-8"));
const home = homedir();
const config = await getMcpConfigForManifest({
  manifest,
  extensionPath,
  systemDirs: { HOME: home, DESKTOP: join(home, "Desktop"), DOCUMENTS: join(home, "Documents"), DOWNLOADS: join(home, "Downloads") },
  userConfig: JSON.parse(answers),
  pathSeparator: sep,
  logger: console,
});
if (config === undefined) {
  console.error("the host would not start this bundle (a required setting is missing)");
  process.exit(1);
}
console.log(JSON.stringify(config));
