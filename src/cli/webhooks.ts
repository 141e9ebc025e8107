import type { Command } from 'commander';
import { OperatorError } from '../common/operator-error.js';
import { WebhooksService, type EndpointSummary, type IssuedSecret } from '../webhooks/webhooks.service.js';
import type { CliContext, Output } from './context.js';

function secretOutput(issued: IssuedSecret, note: string, warning = ''): Output {
  return {
    json: issued,
    text: `${issued.id}  ${issued.url}  (credential ${issued.credential})\nsigning secret, shown only now${note}: ${issued.secret}${warning ? `\nwarning: ${warning}` : ''}`,
  };
}

function endpointLines(e: EndpointSummary): string {
  const lines = [`${e.id}  ${e.state}  ${e.url}${e.allowPrivate ? '  (private addresses allowed)' : ''}`];
  lines.push(`  credential ${e.credential}  pending events ${e.pendingEvents}  last delivery ${e.lastDeliveryAt ?? 'never'}`);
  if (e.failingSince) lines.push(`  failing since ${e.failingSince}`);
  if (e.lastError) lines.push(`  last error (${e.lastErrorAt}): ${e.lastError}`);
  if (e.previousSecretUntil) lines.push(`  previous secret signs too until ${e.previousSecretUntil}`);
  return lines.join('\n');
}

export function registerWebhooks(program: Command, cli: CliContext): void {
  const webhooks = program.command('webhooks').description('webhook endpoints told when a credential\'s visits change');
  registerUrlCommands(webhooks, cli);
  webhooks
    .command('list')
    .description('list endpoints: state, failing since, last delivery, last error, pending events (no secrets)')
    .action(
      cli.action(async () =>
        cli.withApp(async (app) => {
          const all = await app.get(WebhooksService).list();
          return { json: all, text: all.map(endpointLines).join('\n') || '(no webhook endpoints)' };
        }),
      ),
    );
  for (const [verb, description] of [
    ['disable', 'stop sending to an endpoint; events already waiting wait until it is enabled, changes made meanwhile raise none (the change feed has them)'],
    ['enable', 'send to a disabled endpoint again'],
    ['remove', 'remove an endpoint and the events waiting for it'],
  ] as const) {
    webhooks
      .command(verb)
      .description(description)
      .argument('<id>', 'the endpoint id (wh_…)')
      .action(
        cli.action(async (id: string) =>
          cli.withApp(async (app) => {
            const service = app.get(WebhooksService);
            if (verb === 'remove') await service.remove(id);
            else await service.setDisabled(id, verb === 'disable');
            return { json: { id, [verb === 'remove' ? 'removed' : 'disabled']: verb !== 'enable' }, text: `${id} ${verb}d` };
          }),
        ),
      );
  }
  webhooks
    .command('rotate-secret')
    .description('give an endpoint a new signing secret (printed once); the old one signs too for 24 hours (two secrets at most: a second rotation within them ends the oldest at once)')
    .argument('<id>', 'the endpoint id (wh_…)')
    .action(
      cli.action(async (id: string) =>
        cli.withApp(async (app) => {
          const { issued, takeBack } = await app.get(WebhooksService).rotateSecret(id);
          const note = issued.previousSecretUntil
            ? `; the previous one signs too until ${issued.previousSecretUntil}`
            : '; the previous one could not be decrypted and signs no more';
          const dropped = issued.secretDroppedEarly
            ? `the secret before the previous rotation, which was to sign until ${issued.secretDroppedEarly}, signs no more: a receiver still verifying with it fails from now on`
            : '';
          // A rotation whose new secret nobody saw is taken back: rotated again instead, the secret
          // the receiver verifies with would stop signing (two secrets sign at most).
          return cli.printOnce(secretOutput(issued, note, dropped), takeBack);
        }, { writesSecrets: true }),
      ),
    );
  webhooks
    .command('test')
    .description('send a ping event to an endpoint now and report its answer')
    .argument('<id>', 'the endpoint id (wh_…)')
    .action(
      cli.action(async (id: string) =>
        cli.withApp(async (app) => {
          const result = await app.get(WebhooksService).test(id);
          // With --json, what the receiver answered goes with the error: { error, ok, status, eventId }.
          if (!result.ok) throw new OperatorError(`ping ${result.eventId} to ${id} failed: ${result.error}`, { ok: false, status: result.status, eventId: result.eventId });
          return { json: result, text: `ping ${result.eventId} to ${id} delivered: HTTP ${result.status}` };
        }),
      ),
    );
}

/** What `--url` and `--allow-private` give. */
interface UrlOptions {
  url: string;
  allowPrivate?: boolean;
}

/** The options of a command that gives an endpoint its URL. */
function urlOptions(command: Command, url: string): Command {
  return command.requiredOption('--url <url>', url).option('--allow-private', 'allow a URL that leads to a private, link-local or loopback address');
}

/**
 * `webhooks add`, a new endpoint for a credential (its signing secret printed once), and
 * `webhooks set-url`, which sends an endpoint's events to another URL (its id, secret and
 * waiting events stay).
 */
function registerUrlCommands(webhooks: Command, cli: CliContext): void {
  urlOptions(
    webhooks.command('add').description('add an endpoint for a credential; prints its signing secret once').argument('<clientId>', 'the credential client id (svc_…)'),
    'https URL that receives the events',
  ).action(
    cli.action(async (clientId: string, opts: UrlOptions) =>
      cli.withApp(async (app) => {
        const service = app.get(WebhooksService);
        const issued = await service.add(clientId, opts.url, opts.allowPrivate ?? false);
        return cli.printOnce(secretOutput(issued, ''), () => service.remove(issued.id));
      }, { writesSecrets: true }),
    ),
  );
  urlOptions(
    webhooks.command('set-url').description("send an endpoint's events to another URL; its id, signing secret and waiting events stay").argument('<id>', 'the endpoint id (wh_…)'),
    'https URL that receives the events from now on',
  ).action(
    cli.action(async (id: string, opts: UrlOptions) =>
      cli.withApp(async (app) => {
        const moved = await app.get(WebhooksService).setUrl(id, opts.url, opts.allowPrivate ?? false);
        return { json: moved, text: `${id} now sends to ${moved.url}${moved.allowPrivate ? '  (private addresses allowed)' : ''}` };
      }),
    ),
  );
}
