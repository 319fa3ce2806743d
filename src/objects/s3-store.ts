// The S3 object store: artifacts uploaded with multipart for large files, handed out as
// presigned GetObject URLs (S3 checks them when a transfer starts, as the local store does).

import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DeleteObjectCommand, GetObjectCommand, NoSuchKey, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { ObjectStore } from './object-store.js';

export interface S3StoreOptions {
  bucket: string;
  /** Key prefix inside the bucket, e.g. "ipsift/" (may be empty). */
  prefix?: string;
  region?: string;
  /** An S3-compatible endpoint (e.g. a local server); path-style addressing is then used. */
  endpoint?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

export class S3Store implements ObjectStore {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(o: S3StoreOptions) {
    const config: S3ClientConfig = { region: o.region ?? 'us-east-1' };
    if (o.endpoint) {
      config.endpoint = o.endpoint;
      config.forcePathStyle = true;
    }
    if (o.credentials) config.credentials = o.credentials;
    this.client = new S3Client(config);
    this.bucket = o.bucket;
    this.prefix = o.prefix ?? '';
  }

  async put(key: string, file: string): Promise<void> {
    // Parts of 8 MiB, four at a time: large exports stream from disk, never whole in memory.
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: this.prefix + key, Body: fs.createReadStream(file) },
      partSize: 8 * 1024 * 1024,
      queueSize: 4,
    });
    await upload.done();
  }

  async fetch(key: string, file: string): Promise<boolean> {
    let body: Readable;
    try {
      body = (await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }))).Body as Readable;
    } catch (e) {
      if (e instanceof NoSuchKey || (e as { name?: string }).name === 'NoSuchKey') return false;
      throw e;
    }
    await pipeline(body, fs.createWriteStream(file));
    return true;
  }

  async delete(key: string): Promise<void> {
    // S3 answers a delete of a missing key with success too.
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }));
  }

  async signedUrl(key: string, expiresAt: number, downloadName: string): Promise<string> {
    const command = new GetObjectCommand({
      Bucket: this.bucket,
      Key: this.prefix + key,
      ResponseContentDisposition: `attachment; filename="${downloadName.replace(/[^A-Za-z0-9._-]/g, '_')}"`,
    });
    return getSignedUrl(this.client, command, { expiresIn: Math.max(1, Math.round((expiresAt - Date.now()) / 1000)) });
  }

  close(): void {
    this.client.destroy();
  }
}
