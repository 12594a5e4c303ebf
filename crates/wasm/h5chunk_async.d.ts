import init, { H5File, UrlCache, Child, Attribute, DatasetInfo, Values } from "./h5chunk_wasm.js";

export { init as default, init };

/** An HDF5 file at a URL read by asynchronous range requests (`fetch`): `H5File`'s methods,
 * each a Promise; usable on a page as well as in a worker. */
export class AsyncH5File {
  private constructor(file: H5File, cache: UrlCache);
  /** Open `url` (the server must answer Range with 206 and, across origins, expose Content-Range). */
  static open(url: string): Promise<AsyncH5File>;
  readonly name: string;
  /** Range requests made so far. */
  readonly requests: number;
  /** Bytes those requests returned. */
  readonly bytesFetched: number;
  children(path: string): Promise<Child[]>;
  attrs(path: string): Promise<Attribute[]>;
  isDataset(path: string): Promise<boolean>;
  info(path: string): Promise<DatasetInfo>;
  read(path: string, start?: number[] | null, count?: number[] | null, step?: number[] | null): Promise<Values>;
  /** The dataset at `path` read again from the server (a file being written); its shape. */
  refresh(path: string): Promise<number[]>;
  free(): void;
}
