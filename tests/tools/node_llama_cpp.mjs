// node-llama-cpp (the llama.cpp oracle) for the reference tools, imported from $HEARTH_REF (or
// $REF_HARNESS), the folder ../shared/tools/reference/setup.sh made.
import {createRequire} from "node:module";
import {pathToFileURL} from "node:url";
import path from "node:path";

export async function importNodeLlamaCpp() {
    for (const d of [process.env.HEARTH_REF, process.env.REF_HARNESS].filter(Boolean)) {
        try {
            const req = createRequire(path.join(path.resolve(d), "package.json"));
            return await import(pathToFileURL(req.resolve("node-llama-cpp")).href);
        } catch { /* next */ }
    }
    throw new Error("node-llama-cpp not found: set HEARTH_REF to the reference folder");
}
