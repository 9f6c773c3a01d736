// The app's one API client.
import { ApiClient } from "./client";

export const api = new ApiClient();
