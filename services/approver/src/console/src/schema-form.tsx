import { useState } from 'preact/hooks';
import { pretty } from './format.js';

/** The part of JSON Schema the form reads; anything else is edited as JSON. */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  description?: string;
  title?: string;
  minimum?: number;
  maximum?: number;
  maxLength?: number;
}

type Obj = Record<string, unknown>;

/** A form for an object's fields, generated from its JSON Schema; `value` is what the model proposed (or the edit so far). */
export function SchemaForm({
  schema,
  value,
  onChange,
  idPrefix,
  legend,
}: {
  schema: JsonSchema;
  value: Obj;
  onChange: (v: Obj) => void;
  idPrefix: string;
  legend: string;
}) {
  const props = schema.properties ?? {};
  const names = [...new Set([...Object.keys(props), ...Object.keys(value)])];
  return (
    <fieldset class="schema-form">
      <legend>{legend}</legend>
      {names.map((name) => (
        <Field
          key={name}
          id={`${idPrefix}-${name}`}
          name={name}
          schema={props[name] ?? {}}
          required={schema.required?.includes(name) ?? false}
          value={value[name]}
          onChange={(v) => {
            const next = { ...value };
            if (v === undefined) delete next[name];
            else next[name] = v;
            onChange(next);
          }}
        />
      ))}
    </fieldset>
  );
}

const typeOf = (s: JsonSchema): string | undefined => (Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type);

function Field({
  id,
  name,
  schema,
  required,
  value,
  onChange,
}: {
  id: string;
  name: string;
  schema: JsonSchema;
  required: boolean;
  value: unknown;
  onChange: (v: unknown) => void;
}) {
  const type = typeOf(schema);
  const label = (
    <label for={id}>
      {name}
      {required ? <span aria-hidden="true"> *</span> : null}
      {schema.description ? <span class="muted"> — {schema.description}</span> : null}
    </label>
  );
  if (schema.enum) {
    // A proposed value outside the schema's words (高 for high: the tool normalises it) is kept as a choice.
    const options = [...new Set([...(value === undefined ? [] : [String(value)]), ...schema.enum.map(String)])];
    return (
      <div class="field">
        {label}
        <select
          id={id}
          name={name}
          required={required}
          value={value === undefined ? '' : String(value)}
          onChange={(e) => {
            const chosen = e.currentTarget.value;
            onChange(chosen === '' ? undefined : (schema.enum?.find((o) => String(o) === chosen) ?? chosen));
          }}
        >
          {required ? null : <option value="">(none)</option>}
          {options.map((o) => (
            <option key={o} value={o}>
              {o}
            </option>
          ))}
        </select>
      </div>
    );
  }
  if (type === 'boolean')
    return (
      <div class="field check">
        <input id={id} name={name} type="checkbox" checked={value === true} onChange={(e) => onChange(e.currentTarget.checked)} />
        {label}
      </div>
    );
  if (type === 'number' || type === 'integer')
    return (
      <div class="field">
        {label}
        <input
          id={id}
          name={name}
          type="number"
          step={type === 'integer' ? 1 : 'any'}
          min={schema.minimum}
          max={schema.maximum}
          required={required}
          value={value === undefined ? '' : String(value)}
          onInput={(e) => {
            const raw = e.currentTarget.value;
            onChange(raw === '' ? undefined : Number(raw));
          }}
        />
      </div>
    );
  if (type === 'string') {
    const text = value === undefined ? '' : String(value);
    const long = text.length > 60 || (schema.maxLength ?? 0) > 200;
    return (
      <div class="field">
        {label}
        {long ? (
          <textarea id={id} name={name} rows={3} required={required} value={text} onInput={(e) => onChange(e.currentTarget.value)} />
        ) : (
          <input id={id} name={name} required={required} value={text} onInput={(e) => onChange(e.currentTarget.value)} />
        )}
      </div>
    );
  }
  return <JsonField id={id} label={label} value={value} onChange={onChange} />;
}

/** Arrays, nested objects and unions: edited as JSON, kept only once it parses. */
function JsonField({
  id,
  label,
  value,
  onChange,
}: {
  id: string;
  label: preact.ComponentChild;
  value: unknown;
  onChange: (v: unknown) => void;
}) {
  const [text, setText] = useState(value === undefined ? '' : pretty(value));
  const [bad, setBad] = useState(false);
  return (
    <div class="field">
      {label}
      <textarea
        id={id}
        rows={4}
        class="mono"
        aria-invalid={bad}
        value={text}
        onInput={(e) => {
          const raw = e.currentTarget.value;
          setText(raw);
          try {
            onChange(raw.trim() === '' ? undefined : JSON.parse(raw));
            setBad(false);
          } catch {
            setBad(true);
          }
        }}
      />
      {bad ? <p class="error">Not valid JSON yet.</p> : null}
    </div>
  );
}
