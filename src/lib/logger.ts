import pino from 'pino';
import { redactErr, redactLogObject, redactMessage } from '../audit/log-redact.ts';
import { isoNow } from './iso-now.ts';
import { LogSink } from './log-sink.ts';

/**
 * The process's logger: JSON lines on stdout, secrets redacted wherever they appear
 * (loggerOptions), one `time` string per millisecond (lib/iso-now.ts), written in batches
 * (lib/log-sink.ts).
 */
export function createLogger(level: string) {
  // Lines collect until 4 KiB (about fifteen request lines) or 200 ms, whichever comes first, so a busy
  // gateway pays one write(2) per batch instead of one per request, and a quiet one still shows a line
  // within 200 ms (lib/log-sink.ts). What is still collected is written when the process exits: this
  // listener is added before pino.destination adds its own, so the batch reaches the destination before
  // pino's exit handler writes the destination out.
  let sink: LogSink | null = null;
  process.once('exit', () => {
    try {
      sink?.flushSync();
    } catch {
      // stdout is gone (EPIPE, closed): nothing left to write to.
    }
  });
  sink = new LogSink(pino.destination({ dest: 1, sync: false, minLength: 0 }));
  return pino(loggerOptions(level), sink);
}

/**
 * What every line goes through: the paths below, then every string at any depth and every logged error
 * masked as a possible proxy line or URL (audit/log-redact.ts), as the audit log and answers are.
 */
export function loggerOptions(level: string): pino.LoggerOptions {
  return {
    level,
    base: { service: 'rota' },
    timestamp: () => `,"time":"${isoNow()}"`,
    formatters: { log: redactLogObject },
    serializers: { err: redactErr, msg: redactMessage },
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-api-key"]',
        'req.headers.cookie',
        'req.headers["proxy-authorization"]',
        '*.password',
        '*.api_key',
        '*.apiKey',
        '*.token',
        '*.authorization',
        '*.cookie',
        '*["x-api-key"]',
        '*["proxy-authorization"]',
      ],
      censor: '[REDACTED]',
    },
  };
}
