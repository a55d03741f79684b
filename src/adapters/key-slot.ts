/**
 * The Redis Cluster hash slot of a key (`CLUSTER KEYSLOT`): CRC16 (XMODEM) of its UTF-8 bytes, or of
 * its hash tag (what lies between the first `{` and the next `}`, when that is not empty), modulo
 * 16384. The cluster drivers use it to send `WAIT` to the primary serving a lock's slot, which the
 * client libraries route only for commands with keys.
 */
export function keySlot(key: string): number {
  const bytes = Buffer.from(key, 'utf8');
  const open = bytes.indexOf(0x7b); // {
  let hashed = bytes;
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1); // }
    if (close > open + 1) hashed = bytes.subarray(open + 1, close);
  }
  return crc16(hashed) & 16383;
}

const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte += 1) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[byte] = crc & 0xffff;
  }
  return table;
})();

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) ^ (TABLE[((crc >> 8) ^ byte) & 0xff] as number)) & 0xffff;
  return crc;
}
