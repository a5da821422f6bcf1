export { type OfferedTool, playAnyTools } from './any-tools.js';
export { type ExplicitScript, loadScript, playScript, scriptSchema } from './explicit-script.js';
export { playOrderAssistant, type ScriptCall, type ScriptMessage, type ScriptReply } from './script.js';
export { countTokens, createScriptedModelServer, SCRIPTED_MODEL_ID, type ScriptedModelOptions } from './server.js';
