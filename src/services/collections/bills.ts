import type { Queryable } from '../../db';
import type { BillServiceRow, ElectricityBillerRow, PinBundleRow } from '../../domain/bills';

/** Every billable service of the catalogue (migration 004 seeds it), in catalogue order. */
export async function listBillServices(sql: Queryable): Promise<BillServiceRow[]> {
  return await sql<BillServiceRow[]>`
    select id, service_id as "serviceId", service_code as "serviceCode", service_category as "serviceCategory",
      service_type as "serviceType", service_name as "serviceName", service_description as "serviceDescription",
      service_handler as "serviceHandler", service_provider as "serviceProvider", service_enabled as "serviceEnabled",
      service_status as "serviceStatus", deployed, created_at as "createdAt", updated_at as "updatedAt"
    from bill_services order by id`;
}

export async function listElectricityBillers(sql: Queryable): Promise<ElectricityBillerRow[]> {
  return await sql<ElectricityBillerRow[]>`
    select name, service_types as "serviceTypes" from electricity_billers order by id`;
}

/** The providers that sell pin bundles (the valid `service_type` values). */
export async function pinBundleProviders(sql: Queryable): Promise<string[]> {
  const rows = await sql<{ provider: string }[]>`select distinct provider from pin_bundles order by provider`;
  return rows.map((row) => row.provider);
}

export async function listPinBundles(sql: Queryable, provider: string): Promise<PinBundleRow[]> {
  return await sql<PinBundleRow[]>`
    select amount::text as amount, available, description from pin_bundles
    where provider = ${provider}
    order by amount`;
}
