import type { Logger } from 'pino';
import { redactDeep } from './redact.ts';

export type AuditOutcome = 'success' | 'failure' | 'denied' | 'rate_limited';

export interface AuditEvent {
  action: string;
  request_id: string;
  client_ip: string;
  method: string;
  route: string;
  status: number;
  outcome: AuditOutcome;
  body?: unknown;
  params?: unknown;
}

/**
 * One JSON line per write or admin operation, and per refused authentication. Bodies are redacted here,
 * not by the caller, so that no path can forget to.
 */
export class AuditLog {
  private readonly logger: Logger | null;
  constructor(logger: Logger, enabled: boolean) {
    this.logger = enabled ? logger.child({ audit: true }) : null;
  }

  get enabled(): boolean {
    return this.logger !== null;
  }

  record(event: AuditEvent): void {
    if (!this.logger) return;
    const { body, params, ...rest } = event;
    this.logger.info(
      {
        ...rest,
        ...(body === undefined ? {} : { body: redactDeep(body) }),
        ...(params === undefined ? {} : { params: redactDeep(params) }),
      },
      `audit ${event.action}`,
    );
  }
}
