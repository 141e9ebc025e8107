/**
 * Rendered visit pages, least recently used first out, within a byte budget. A key names
 * the client's data version, so a page of data that has since changed is never found; old
 * versions simply age out.
 */
export class PageCache {
  private readonly pages = new Map<string, Buffer>();
  private bytes = 0;

  constructor(private readonly budgetBytes: number) {}

  get(key: string): Buffer | undefined {
    const page = this.pages.get(key);
    if (page) {
      // Most recently used last.
      this.pages.delete(key);
      this.pages.set(key, page);
    }
    return page;
  }

  set(key: string, page: Buffer): void {
    if (page.length > this.budgetBytes / 4) return;
    const previous = this.pages.get(key);
    if (previous) this.bytes -= previous.length;
    this.pages.delete(key);
    this.pages.set(key, page);
    this.bytes += page.length;
    for (const [oldest, old] of this.pages) {
      if (this.bytes <= this.budgetBytes) break;
      this.pages.delete(oldest);
      this.bytes -= old.length;
    }
  }

  get size(): { pages: number; bytes: number } {
    return { pages: this.pages.size, bytes: this.bytes };
  }
}
