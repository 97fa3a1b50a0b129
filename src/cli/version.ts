/** The version printed by `edgeplane --version`: package.json's, bundled by esbuild. */
import pkg from '../../package.json' with { type: 'json' };

export const version: string = pkg.version;
