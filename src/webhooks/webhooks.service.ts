import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { CredentialsService } from '../auth/credentials.service.js';
import { readsVisits } from '../auth/scopes.js';
import { withoutCredentials } from '../common/loggable-url.js';
import { OperatorError } from '../common/operator-error.js';
import type { SecretBox } from '../common/secret-box.js';
import { AppConfig } from '../config/app-config.js';
import type { WebhookEndpoint } from './entities/webhook-endpoint.entity.js';
import { pingEvent } from './webhook-event.js';
import { newSigningSecret, opens, signingSecrets, webhookSecretBox } from './webhook-secrets.js';
import { sendEvent, type WebhookResult } from './webhook-sender.js';
import { checkEndpointUrl } from './webhook-url.js';
import { WebhooksRepository } from './webhooks.repository.js';

/** How long the secret before a rotation keeps signing: receivers switch within it. */
export const PREVIOUS_SECRET_HOURS = 24;

/** Shown once, when an endpoint is added or its secret rotated. */
export interface IssuedSecret {
  id: string;
  url: string;
  credential: string;
  secret: string;
}

export interface EndpointSummary {
  id: string;
  credential: string;
  url: string;
  allowPrivate: boolean;
  /**
   * `disabled`: the endpoint was disabled; `credential-disabled`: the endpoint is enabled but
   * its credential is not, so nothing is recorded for it or sent to it until the credential is
   * enabled again; `failing`: deliveries fail since `failingSince`.
   */
  state: 'active' | 'failing' | 'disabled' | 'credential-disabled';
  failingSince: string | null;
  lastDeliveryAt: string | null;
  lastError: string | null;
  lastErrorAt: string | null;
  pendingEvents: number;
  /** Until when the secret before the last rotation still signs; null when it does not. */
  previousSecretUntil: string | null;
  createdAt: string;
}

const iso = (at: Date | null): string | null => at?.toISOString() ?? null;

/** The operator's webhook commands (CLI): endpoints, their secrets, and a test event. */
// A signing secret pasted for an endpoint id is quoted [redacted]: the error lands in a terminal's or a Job's log.
const noEndpoint = (id: string): OperatorError => new OperatorError(`webhook endpoint '${withoutCredentials(id)}' does not exist`);

/** An endpoint's signing secrets as stored (encrypted). */
type EndpointSecrets = Pick<WebhookEndpoint, 'secret' | 'previousSecret' | 'previousSecretUntil'>;

/** A rotation: the new secret as shown once, and how to take the rotation back when it could not be shown. */
export interface RotatedSecret {
  issued: IssuedSecret & { previousSecretUntil: string | null; secretDroppedEarly: string | null };
  takeBack: () => Promise<void>;
}

@Injectable()
export class WebhooksService {
  private readonly box: SecretBox;

  constructor(
    private readonly repo: WebhooksRepository,
    private readonly config: AppConfig,
    private readonly credentials: CredentialsService,
  ) {
    this.box = webhookSecretBox(config.API_KEY_HASH_KEY);
  }

  /** The URL as an endpoint may have it (see checkEndpointUrl), or an OperatorError naming --url. */
  private async endpointUrl(url: string, allowPrivate: boolean): Promise<URL> {
    try {
      return await checkEndpointUrl(url, { allowPrivate, allowHttpLoopback: this.config.WEBHOOKS_ALLOW_HTTP_LOOPBACK });
    } catch (error) {
      throw new OperatorError(`--url: ${(error as Error).message}`);
    }
  }

  async add(credentialId: string, url: string, allowPrivate = false): Promise<IssuedSecret> {
    if (!readsVisits(await this.credentials.scopesOf(credentialId))) {
      throw new OperatorError(`credential ${credentialId} may read no visits (neither visits/standard.read nor visits/plus.read): its endpoint would never be told of a change`);
    }
    const checked = await this.endpointUrl(url, allowPrivate);
    const secret = newSigningSecret();
    const id = `wh_${randomBytes(8).toString('hex')}`;
    // A second endpoint at the same URL would have the receiver get every event twice.
    const existing = await this.repo.insertEndpointOnce({
      id,
      credentialId,
      url: checked.href,
      allowPrivate,
      secret: this.box.seal(secret),
      previousSecret: null,
      previousSecretUntil: null,
      disabled: false,
      failingSince: null,
      lastDeliveryAt: null,
      lastError: null,
      lastErrorAt: null,
    });
    if (existing) throw new OperatorError(`--url: credential ${credentialId} has an endpoint at ${checked.href} already (${existing.id})`);
    return { id, url: checked.href, credential: credentialId, secret };
  }

  async list(): Promise<EndpointSummary[]> {
    const { endpoints, pending, disabledCredentials } = await this.repo.endpointsWithPending();
    const now = new Date();
    return endpoints.map((e) => ({
      id: e.id,
      credential: e.credentialId,
      url: e.url,
      allowPrivate: e.allowPrivate,
      state: e.disabled ? 'disabled' : disabledCredentials.has(e.credentialId) ? 'credential-disabled' : e.failingSince ? 'failing' : 'active',
      failingSince: iso(e.failingSince),
      lastDeliveryAt: iso(e.lastDeliveryAt),
      lastError: e.lastError,
      lastErrorAt: iso(e.lastErrorAt),
      pendingEvents: pending.get(e.id) ?? 0,
      previousSecretUntil: e.previousSecret && e.previousSecretUntil && e.previousSecretUntil > now ? iso(e.previousSecretUntil) : null,
      createdAt: e.createdAt.toISOString(),
    }));
  }

  private async requireEndpoint(id: string): Promise<WebhookEndpoint> {
    const endpoint = await this.repo.findEndpoint(id);
    if (!endpoint) throw noEndpoint(id);
    return endpoint;
  }

  /** A disabled endpoint gets no new events and is sent none; the events waiting for it stay until it is enabled. */
  async setDisabled(id: string, disabled: boolean): Promise<void> {
    await this.requireEndpoint(id);
    await this.repo.updateEndpoint(id, { disabled });
  }

  /**
   * Sends an endpoint's events to another URL from now on, checked as `add` checks one (with
   * `allowPrivate` as given now). Its id, signing secrets and waiting events stay: a receiver
   * that moves keeps verifying as before and is told of what waited. A request already under
   * way finishes at the old URL.
   */
  async setUrl(id: string, url: string, allowPrivate = false): Promise<{ id: string; url: string; allowPrivate: boolean }> {
    const endpoint = await this.requireEndpoint(id);
    const checked = await this.endpointUrl(url, allowPrivate);
    const result = await this.repo.moveEndpoint(id, checked.href, allowPrivate);
    if (!result.moved && result.takenBy) throw new OperatorError(`--url: credential ${endpoint.credentialId} has an endpoint at ${checked.href} already (${result.takenBy})`);
    if (!result.moved) throw noEndpoint(id);
    return { id, url: checked.href, allowPrivate };
  }

  async remove(id: string): Promise<void> {
    await this.requireEndpoint(id);
    await this.repo.removeEndpoint(id);
  }

  /**
   * A new secret signs from now on; the current one keeps signing too for
   * PREVIOUS_SECRET_HOURS, unless it no longer opens (the server key changed): then the new
   * one signs alone.
   */
  async rotateSecret(id: string): Promise<RotatedSecret> {
    const secret = newSigningSecret();
    const sealed = this.box.seal(secret);
    // Judged on the endpoint as it stands under its lock: of two rotations at once, the second
    // sees the first's secret as the current one, and the secret before both stops signing.
    const rotated = await this.repo.changeEndpoint(id, (endpoint) => {
      const now = new Date();
      const until = opens(this.box, endpoint.secret) ? new Date(now.getTime() + PREVIOUS_SECRET_HOURS * 3_600_000) : null;
      // Two secrets sign at most: the one before the last rotation, if it still signed, stops now.
      const dropped = endpoint.previousSecret && endpoint.previousSecretUntil && endpoint.previousSecretUntil > now ? endpoint.previousSecretUntil : null;
      const before = { secret: endpoint.secret, previousSecret: endpoint.previousSecret, previousSecretUntil: endpoint.previousSecretUntil };
      return {
        patch: { secret: sealed, previousSecret: until ? endpoint.secret : null, previousSecretUntil: until },
        result: {
          issued: { id, url: endpoint.url, credential: endpoint.credentialId, secret, previousSecretUntil: iso(until), secretDroppedEarly: iso(dropped) },
          takeBack: () => this.restoreSecrets(id, sealed, before),
        },
      };
    });
    if (!rotated) throw noEndpoint(id);
    return rotated;
  }

  /**
   * Puts back the secrets a rotation replaced: one whose new secret could not be shown (the
   * CLI's output failed), which nobody holds, so that the secret the receiver verifies with
   * signs on as before; only while the secret that rotation made is still the current one.
   */
  private async restoreSecrets(id: string, sealed: string, before: EndpointSecrets): Promise<void> {
    await this.repo.changeEndpoint(id, (endpoint) => ({ patch: endpoint.secret === sealed ? before : {}, result: undefined }));
  }

  /** Sends a ping event now, from this process, signed as deliveries are; the receiver's answer is the result. */
  async test(id: string): Promise<WebhookResult & { eventId: string }> {
    const endpoint = await this.requireEndpoint(id);
    let secrets: string[];
    try {
      secrets = signingSecrets(this.box, endpoint, new Date());
    } catch (error) {
      throw new OperatorError((error as Error).message);
    }
    const event = pingEvent();
    const result = await sendEvent({ url: endpoint.url, allowPrivate: endpoint.allowPrivate, secrets }, event, this.config);
    return { ...result, eventId: event.id };
  }
}
