import { execFileSync } from "node:child_process";

/**
 * Writes a minimal wheel `<name>-<version>-py3-none-any.whl` into `dir`, holding `members`
 * (path in the wheel → contents, or `{ file }` to copy one from disk). pip takes it from a local
 * folder (PIP_NO_INDEX=1, PIP_FIND_LINKS=dir), so fetches through pip run with no network.
 */
export function writeWheel(
  dir: string,
  name: string,
  version: string,
  members: Record<string, string | { file: string }>,
): void {
  const script = `
import json, sys, zipfile
dir, name, version, members = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
dist = name.replace("-", "_")
info = f"{dist}-{version}.dist-info"
with zipfile.ZipFile(f"{dir}/{dist}-{version}-py3-none-any.whl", "w") as z:
    for member, contents in members.items():
        if isinstance(contents, str):
            z.writestr(member, contents)
        else:
            z.write(contents["file"], member)
    z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n")
    z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
    z.writestr(f"{info}/RECORD", "")
`;
  execFileSync("python3", ["-c", script, dir, name, version, JSON.stringify(members)]);
}
