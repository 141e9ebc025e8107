import type { Command } from 'commander';
import { KeyringService } from '../auth/keyring.service.js';
import { OperatorError } from '../common/operator-error.js';
import type { CliContext } from './context.js';

export function registerSigningKeys(program: Command, cli: CliContext): void {
  const signing = program.command('signing-keys').description('keys that sign access tokens');
  signing
    .command('list')
    .description('list signing keys: which signs, which are published to sign later, which are retired')
    .action(
      cli.action(async () =>
        cli.withApp(async (app) => {
          const keys = await app.get(KeyringService).list();
          // By the clock the keys' turns go by (the database's), as `signing` is: not this host's.
          const now = (await app.get(KeyringService).now()).getTime();
          const state = (k: (typeof keys)[number]): string => {
            if (k.signing) return 'signing';
            if (k.retiredAt) return `retired ${k.retiredAt}`;
            return Date.parse(k.signsFrom) > now ? `published, signs from ${k.signsFrom}` : 'verifying';
          };
          const text = keys.map((k) => `${k.kid}\t${k.source}\t${state(k)}\t${k.createdAt}`).join('\n');
          return { json: keys, text: text || '(no signing keys yet: one is created on first use)' };
        }),
      ),
    );
  signing
    .command('rotate')
    .description(
      'add a new signing key, published at once and signing 7 minutes later, once verifiers that keep the key set for its max-age (5 minutes) know it; ' +
        'tokens signed by older keys keep verifying until those are retired',
    )
    .option('--now', 'sign with the new key at once (a compromised key): verifiers holding the key set read before it refuse its tokens until they read it again')
    .action(
      cli.action(async (options: { now?: boolean }) =>
        cli.withApp(async (app) => {
          const key = await app.get(KeyringService).rotate({ now: options.now === true });
          const text = options.now
            ? `signing key ${key.kid} added; it signs new tokens (on every replica within AUTH_CACHE_SECONDS)`
            : `signing key ${key.kid} added and published; it signs new tokens from ${key.signsFrom}`;
          return { json: key, text };
        }, { writesSecrets: true }),
      ),
    );
  signing
    .command('retire')
    .description('retire a signing key: tokens it signed stop working (within AUTH_CACHE_SECONDS, 10 s by default, on every replica)')
    .argument('<kid>', 'the key id')
    .option(
      '--force',
      'retire a key replicas may sign with until they read the keys again (AUTH_CACHE_SECONDS): the key that signed until a rotation less than that ago, ' +
        'or a published key that begins to sign within it (a compromised key): tokens replicas still sign with it then fail',
    )
    // A key id is a base64url thumbprint and may begin with '-': it is the argument, not an option.
    .allowUnknownOption()
    .allowExcessArguments()
    .action(
      cli.action(async (kid: string, options: { force?: boolean }, command: Command) => {
        // Anything beside the one key id is a mistake: an option mistyped (`--forec`) is said as one.
        const extra = command.args.slice(1);
        if (extra.length > 0) {
          const option = command.args.find((arg) => arg.startsWith('--'));
          throw new OperatorError(option ? `unknown option '${option}'` : `one key id only: '${extra.join(' ')}' is more`);
        }
        return cli.withApp(async (app) => {
          const retired = await app.get(KeyringService).retire(kid, { force: options.force === true });
          const text = retired === 'already' ? `signing key ${kid} was retired already` : `signing key ${kid} retired`;
          return { json: { kid, retired: true }, text };
          // Judged by this process's API_KEY_HASH_KEY: with another value than the service's, every
          // stored key looked added by mistake, and --force retired keys the service signs and verifies with.
        }, { writesSecrets: true });
      }),
    );
}
